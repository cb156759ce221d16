-- When the next ready task held back by its not-before time (a retry's backoff, or a
-- submission's start time) becomes due, along tasks_delayed.
--
-- ?1 now: only times after it
--
-- state: 1 ready. not_before 0 means due at once; only delayed tasks enter tasks_delayed.
SELECT MIN(not_before) FROM tasks INDEXED BY tasks_delayed
WHERE state = 1 AND not_before > 0 AND not_before > ?1;
