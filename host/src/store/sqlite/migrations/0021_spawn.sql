-- Children submitted by running tasks (see store/spawn.rs).
--
-- `parent_id`: the task that submitted it, none for a client's; `depth`: 0 for a
-- client's, its parent's plus one for a child. `saved_state`: what the task's last
-- suspended attempt saved, for its next attempt.
ALTER TABLE tasks ADD COLUMN parent_id INTEGER;
ALTER TABLE tasks ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN saved_state BLOB;
-- A parent's children, counted against its quota of them.
CREATE INDEX tasks_parent ON tasks (parent_id) WHERE parent_id IS NOT NULL;
