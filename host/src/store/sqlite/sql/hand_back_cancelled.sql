-- Ends a task its node handed back unstarted, whose cancellation reached it before it
-- started: as a pending task would end. The attempt it never began is not counted.
--
-- ?1 now (ended_at)
-- ?2 task id
--
-- state: 5 cancelled.
UPDATE tasks SET state = 5, listed = 5, attempts = attempts - 1, ended_at = ?1,
    outcome = 'cancelled', error = 'cancelled before it ran',
    lease_node = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = ?2;
