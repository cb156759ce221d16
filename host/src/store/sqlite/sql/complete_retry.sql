-- Puts a task whose attempt failed back in the queue for another attempt, after its
-- backoff; keeps the failure's outcome and error until the next attempt ends. It is ready
-- at its batch's gate, and waits behind it when a re-drive has reopened a lower order
-- since its claim.
--
-- ?1 not before: when the next attempt may be claimed
-- ?2 the failed attempt's outcome
-- ?3 its error
-- ?4 task id
-- ?5 attempts given back: 1 after a host error (the attempt is not the task's), else 0
-- ?6 deferrals: 1 after a deferred attempt (which the attempts it may make count on top
--    of max_attempts), else 0
--
-- state: 1 ready, 0 waiting.
-- OR FAIL: no statement journal (see the driver's mod.rs).
UPDATE OR FAIL tasks SET not_before = ?1, outcome = ?2, error = ?3,
    max_attempts = max_attempts + ?5, deferrals = deferrals + ?6,
    lease_node = NULL, lease_token = NULL, lease_expires = NULL,
    state = CASE WHEN ord = (SELECT MIN(ord) FROM batch_orders o WHERE o.batch_id = tasks.batch_id)
                 THEN 1 ELSE 0 END
WHERE id = ?4;
