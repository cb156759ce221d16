-- The first group after a key (>) that has ready tasks, along the per-group ready index
-- tasks_ready_group.
--
-- ?1 the key to read after
--
-- state: 1 ready.
SELECT group_key FROM tasks INDEXED BY tasks_ready_group
WHERE state = 1 AND group_key IS NOT NULL AND group_key > ?1
ORDER BY group_key LIMIT 1;
