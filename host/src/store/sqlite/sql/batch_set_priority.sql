-- Gives the tasks of a batch that have not started the batch's new priority.
--
-- ?1 the priority
-- ?2 batch id
--
-- state: 0 waiting, 1 ready, 2 claimed; a claimed task without a start mark (started_at
-- NULL) is reserved, not yet started on its node's slot, and still changes. All three
-- are listed as 0 or 1 (migrations/0012_listed.sql).
UPDATE tasks SET priority = ?1 WHERE batch_id = ?2
    AND listed IN (0, 1) AND (state IN (0, 1) OR (state = 2 AND started_at IS NULL));
