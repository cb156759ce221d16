-- qhost's SQLite schema, version 8: indexes for lists of batches and tasks, newest first.
--
-- Batches by creation, alone or per name. Tasks by submission within one stored state,
-- alone or per batch, group, module or outcome: a list reads one stored state at a time along
-- one of these (see `lists.rs`), so that a page, and each capped count, reads as many
-- entries as it shows, whatever the filter. Submission times never change; the state
-- does, on claims and completions, which then move an entry in each.
CREATE INDEX batches_created ON batches (created_at);
CREATE INDEX batches_name ON batches (name, created_at) WHERE name IS NOT NULL;
CREATE INDEX tasks_list_state ON tasks (state, submitted_at);
CREATE INDEX tasks_list_batch ON tasks (batch_id, state, submitted_at);
CREATE INDEX tasks_list_group ON tasks (group_key, state, submitted_at)
    WHERE group_key IS NOT NULL;
CREATE INDEX tasks_list_module ON tasks (module, state, submitted_at);
-- Tasks with an outcome (ended, or pending after an attempt), per outcome.
CREATE INDEX tasks_list_outcome ON tasks (outcome, state, submitted_at)
    WHERE outcome IS NOT NULL;
-- tasks_list_group serves every lookup of a group's tasks.
DROP INDEX tasks_group;
