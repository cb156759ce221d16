-- qhost's PostgreSQL schema, version 11: lists that read only what they show.
--
-- The ready queue by submission, so that a list of ready tasks reads the ready table
-- newest first instead of walking every task (the state is in no index of tasks: see
-- 0003_queue_tables.sql). A task's submission time never changes; whoever inserts into
-- ready copies it from the task.
ALTER TABLE ready ADD COLUMN submitted_at BIGINT;
UPDATE ready r SET submitted_at = t.submitted_at FROM tasks t WHERE t.id = r.task_id;
ALTER TABLE ready ALTER COLUMN submitted_at SET NOT NULL;
CREATE INDEX ready_submitted ON ready (submitted_at, task_id);

-- A batch's attempts by position, the log's order: a page of the log of a batch reads
-- its newest attempts, not every attempt written since (a batch with a time range reads
-- the batch's attempts alone).
DROP INDEX attempts_batch;
CREATE INDEX attempts_batch ON attempts (batch_id, id);
