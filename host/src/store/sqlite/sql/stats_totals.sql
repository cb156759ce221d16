-- The ended totals per state (3 succeeded, 4 failed, 5 cancelled): times a task ended
-- so, and of those, how many left the state since (see migrations/0009_counters.sql).
SELECT state, ended, gone FROM task_totals
