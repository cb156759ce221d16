-- Whether a batch holds a task dearer than 1 (tasks.cost set). The claim probes
-- tasks_costly for the tasks of such batches alone: a row of any other batch costs 1
-- without a look, so a store, or a batch, with no dear task pays nothing for costs.
-- Set by the submission that adds the first dear task; never cleared, as costs never change.
ALTER TABLE batches ADD COLUMN costly BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE batches SET costly = TRUE
WHERE id IN (SELECT batch_id FROM tasks WHERE cost IS NOT NULL);
