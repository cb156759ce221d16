-- Writes attempt records, one element of each array per attempt.
--
-- $1 task ids (bigint[])
-- $2 batch ids (bigint[])
-- $3 attempt numbers (int[])
-- $4 nodes (text[])
-- $5 slots (int[], NULL: not known)
-- $6 lease tokens (bigint[])
-- $7 groups (text[])
-- $8 orders (bigint[])
-- $9 start times (bigint[])
-- $10 end times (bigint[])
-- $11 outcomes (text[])
-- $12 errors (text[])
-- $13 logs (text[], JSON [LogLine], NULL: none)
-- $14 stdout (bytea[], NULL: none)
-- $15 stderr (bytea[], NULL: none)
-- $16 CPU times used, in microseconds (bigint[], NULL: not measured)
-- $17 memory held, in MiB-seconds (float8[], NULL: not measured)
-- $18 HTTP body bytes sent and received (bigint[], NULL: not measured)
INSERT INTO attempts (task_id, batch_id, attempt, node, slot, lease_token,
    group_key, ord, started_at, ended_at, outcome, error, logs, stdout, stderr, cpu_micros,
    memory_mib_seconds, http_bytes)
SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::text[],
    $5::int[], $6::bigint[], $7::text[], $8::bigint[], $9::bigint[],
    $10::bigint[], $11::text[], $12::text[], $13::text[], $14::bytea[],
    $15::bytea[], $16::bigint[], $17::float8[], $18::bigint[])
