-- Puts a task whose attempt failed back in the queue for another attempt, after its
-- backoff; keeps the failure's outcome and error until the next attempt ends.
--
-- ?1 not before: when the next attempt may be claimed
-- ?2 the failed attempt's outcome
-- ?3 its error
-- ?4 task id
--
-- state: 1 ready.
UPDATE tasks SET state = 1, not_before = ?1, outcome = ?2, error = ?3,
    lease_node = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = ?4;
