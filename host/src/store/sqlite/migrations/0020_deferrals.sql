-- qhost's SQLite schema, version 20: back-pressure from tasks (`retry-after`).
--
-- A deferred attempt puts its task back without using an attempt: `deferrals` counts
-- them, bounded by the operator's `max_deferrals`, and the attempts a task may make are
-- its max_attempts plus its deferrals. Its group takes no new task until `held_until`
-- (microseconds; 0 or past: not held), on any node.
ALTER TABLE tasks ADD COLUMN deferrals INTEGER NOT NULL DEFAULT 0;
ALTER TABLE groups ADD COLUMN held_until INTEGER NOT NULL DEFAULT 0;

-- The groups ever held: when the claim took less than it could, when the next hold ends
-- (claim_next_hold.sql), read as a range of the holds still to end.
CREATE INDEX groups_hold_ends ON groups (held_until) WHERE held_until > 0;
