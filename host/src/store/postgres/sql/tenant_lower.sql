-- Lowers to a tenant's priority ceiling the priority of its batches above it, and of their
-- tasks above it that have not started: pending, or claimed but reserved (a node holds it
-- and has not started it; it hands it back on hearing of the change), in the ready queue
-- too. Returns how many tasks changed.
--
-- $1 the ceiling
-- $2 tenant id
--
-- state: 0 waiting at a gate, 1 ready (also in the ready table), 2 claimed (reserved
-- while its lease has no start mark, running once it has).
WITH batches_lowered AS (
    UPDATE batches SET priority = $1 WHERE tenant_id = $2 AND priority > $1),
changed AS (
    UPDATE tasks SET priority = $1
    WHERE batch_id IN (SELECT id FROM batches WHERE tenant_id = $2)
      AND priority > $1
      AND (state IN (0, 1)
           OR (state = 2 AND id IN (SELECT task_id FROM leases WHERE started_at IS NULL)))
    RETURNING id),
queued AS (UPDATE ready SET priority = $1 WHERE task_id IN (SELECT id FROM changed))
SELECT COUNT(*) FROM changed
