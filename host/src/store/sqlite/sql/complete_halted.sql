-- Whether a batch halts on failure and one of its tasks has failed for good.
--
-- ?1 batch id
--
-- state: 4 failed, listed as such (migrations/0012_listed.sql).
SELECT EXISTS (SELECT 1 FROM batches WHERE id = ?1 AND halt_on_failure)
   AND EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_list_batch
               WHERE batch_id = ?1 AND listed = 4);
