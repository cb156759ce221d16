-- Picks ended tasks to prune, locking them; tasks another transaction holds are left for
-- the next chunk. Oldest first along the index of submission times: a task submitted
-- since the cut-off cannot have ended before it, so the walk passes over only what is
-- older and not yet ended, where walking the primary key read every task of the store
-- whenever nothing was due (200 ms at a million tasks). No index on the end time slows
-- every completion.
--
-- $1 the time before which tasks ended are pruned
-- $2 at most this many
--
-- state: 3 succeeded, 4 failed, 5 cancelled (ended).
SELECT id FROM tasks WHERE submitted_at < $1 AND state >= 3 AND ended_at < $1
ORDER BY submitted_at, id LIMIT $2 FOR UPDATE SKIP LOCKED
