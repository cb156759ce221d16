-- Inserts submitted tasks, one element of each array per task, and queues those that are
-- ready. Returns each task's id with its vseq, which tells the tasks apart.
--
-- $1 batch id
-- $2 now (submitted_at)
-- $3 module digests (text[])
-- $4 inputs (bytea[])
-- $5 orders (bigint[])
-- $6 groups (text[], NULL: none)
-- $7 priorities (int[])
-- $8 vseqs (bigint[]): fair-queueing sequence numbers, distinct
-- $9 states (int[])
-- $10 max attempts (int[])
-- $11 retry backoffs, milliseconds (bigint[])
-- $12 limits (text[], JSON TaskLimits)
-- $13 mounts (text[], JSON [MountGrant])
-- $14 not-before times (bigint[], 0: due at once)
-- $15 the trace context they were submitted in (`traceparent`), or NULL
-- $16 keys (text[], NULL: none)
-- $17 how many tasks each runs after (int[], deps_open): waiting (0) while any
-- $18 the batch's tenant, or NULL (the admin's)
-- $19 costs: tokens each spends of its group's rate (int[], NULL: 1)
--
-- state: 0 waiting at a gate (a lower order of its batch is still open), 1 ready (at the
-- gate: also in the ready table).
WITH added AS (
    INSERT INTO tasks (batch_id, module, input, ord, group_key, priority, vseq,
        state, max_attempts, backoff_ms, limits, mounts, not_before, submitted_at, trace_parent,
        task_key, deps_open, tenant_id, cost)
    SELECT $1, module, input, ord, group_key, priority, vseq, state, max_attempts,
        backoff_ms, limits, mounts, not_before, $2, $15::text, task_key, deps_open,
        $18::bigint, cost
    FROM unnest($3::text[], $4::bytea[], $5::bigint[], $6::text[], $7::int[],
        $8::bigint[], $9::int[], $10::int[], $11::bigint[], $12::text[],
        $13::text[], $14::bigint[], $16::text[], $17::int[], $19::int[])
        AS u(module, input, ord, group_key, priority, vseq, state, max_attempts,
             backoff_ms, limits, mounts, not_before, task_key, deps_open, cost)
    RETURNING id, batch_id, group_key, priority, vseq, not_before, state, submitted_at,
        tenant_id),
queued AS (
    INSERT INTO ready (task_id, batch_id, group_key, priority, vseq, not_before,
        submitted_at, tenant_id)
    SELECT id, batch_id, group_key, priority, vseq, not_before, submitted_at, tenant_id
    FROM added
    WHERE state = 1)
SELECT id, vseq FROM added
