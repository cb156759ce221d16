-- What batch ?1's ended attempts have used, summed over its log, along attempts_batch.
SELECT count(*), coalesce(sum(max(ended_at - started_at, 0)), 0),
       coalesce(sum(cpu_micros), 0), coalesce(sum(memory_mib_seconds), 0.0),
       coalesce(sum(http_bytes), 0)
FROM attempts INDEXED BY attempts_batch
WHERE batch_id = ?1
