-- Picks ended tasks to prune, locking them; tasks another transaction holds are left for
-- the next chunk. Oldest first along the primary key: ended tasks are mostly the oldest,
-- and no index on the end time slows every completion.
--
-- $1 the time before which tasks ended are pruned
-- $2 at most this many
--
-- state: 3 succeeded, 4 failed, 5 cancelled (ended).
SELECT id FROM tasks WHERE state >= 3 AND ended_at < $1
ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED
