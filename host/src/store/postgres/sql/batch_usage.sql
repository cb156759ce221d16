-- What batch $1's ended attempts have used, summed over its log.
SELECT count(*), coalesce(sum(greatest(ended_at - started_at, 0)), 0)::bigint,
       coalesce(sum(cpu_micros), 0)::bigint, coalesce(sum(memory_mib_seconds), 0.0)::float8,
       coalesce(sum(http_bytes), 0)::bigint
FROM attempts
WHERE batch_id = $1
