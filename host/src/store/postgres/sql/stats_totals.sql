-- The ended totals per state (3 succeeded, 4 failed, 5 cancelled) over every shard: times
-- a task ended so, and of those, how many left the state since (see
-- migrations/0008_counters.sql).
SELECT state, SUM(ended)::bigint, SUM(gone)::bigint FROM task_totals GROUP BY state
