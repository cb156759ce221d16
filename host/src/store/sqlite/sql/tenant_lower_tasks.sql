-- Lowers to a tenant's priority ceiling its batches' tasks above it that have not started.
--
-- ?1 the ceiling
-- ?2 tenant id
--
-- state: 0 waiting, 1 ready, 2 claimed; a claimed task without a start mark is reserved,
-- not yet started, and still changes (as in batch_set_priority.sql).
UPDATE tasks SET priority = ?1
WHERE batch_id IN (SELECT id FROM batches WHERE tenant_id = ?2)
  AND priority > ?1
  AND listed IN (0, 1) AND (state IN (0, 1) OR (state = 2 AND started_at IS NULL));
