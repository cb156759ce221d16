-- qhost's PostgreSQL schema, version 7: indexes for lists of batches and tasks, newest
-- first.
--
-- Batches by creation, alone or per name; tasks by submission, alone or per batch, group
-- or module. The task state is in none of them: a claim or a completion changes the
-- state, and an index on it would end the heap-only updates that keep them cheap (see
-- 0003_queue_tables.sql). A list filtered by state reads along one of these and skips
-- the tasks in other states.
CREATE INDEX batches_created ON batches (created_at, id);
CREATE INDEX batches_name ON batches (name, created_at, id) WHERE name IS NOT NULL;
CREATE INDEX tasks_list_submitted ON tasks (submitted_at, id);
CREATE INDEX tasks_list_batch ON tasks (batch_id, submitted_at, id);
CREATE INDEX tasks_list_group ON tasks (group_key, submitted_at, id)
    WHERE group_key IS NOT NULL;
CREATE INDEX tasks_list_module ON tasks (module, submitted_at, id);
