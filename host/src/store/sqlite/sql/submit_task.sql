-- Inserts one submitted task.
--
-- ?1 batch id
-- ?2 module digest (hex)
-- ?3 input
-- ?4 order
-- ?5 group key, or NULL
-- ?6 priority
-- ?7 vseq: its fair-queueing position
-- ?8 state: 1 ready if its order is the batch's gate, else 0 waiting; listed as it
-- ?9 max attempts
-- ?10 backoff before the first retry, milliseconds
-- ?11 limits (JSON TaskLimits)
-- ?12 mounts (JSON [MountGrant])
-- ?13 not before: when it becomes due, or 0 when it is due at once (only delayed tasks
--     enter the index tasks_delayed, see migrations/0002_claim_indexes.sql)
-- ?14 now (submitted_at)
-- ?15 the trace context it was submitted in (`traceparent`), or NULL
-- ?16 its key in the batch, or NULL
-- ?17 how many tasks it runs after (deps_open): waiting (0) while any
-- ?18 its batch's tenant, or NULL (the admin's)
-- ?19 its cost: tokens it spends of its group's rate
-- OR FAIL: no statement journal (see the driver's mod.rs).
INSERT OR FAIL INTO tasks (batch_id, module, input, ord, group_key, priority, vseq, state,
    listed, max_attempts, backoff_ms, limits, mounts, not_before, submitted_at, trace_parent,
    task_key, deps_open, tenant_id, cost)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
    ?19);
