-- The task of a batch with a key, and its parent: a child asked for again.
--
-- ?1 batch id
-- ?2 key
SELECT id, parent_id FROM tasks WHERE batch_id = ?1 AND task_key = ?2;
