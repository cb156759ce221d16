-- Ends a task whose attempt did not succeed and that is not retried. The caller has locked
-- the task's row.
--
-- $1 the state it ends in: 4 failed, 5 cancelled
-- $2 now (ended_at)
-- $3 outcome
-- $4 error (or NULL)
-- $5 task id
UPDATE tasks SET state = $1, ended_at = $2, outcome = $3, error = $4, output = NULL,
    lease_node = NULL, lease_token = NULL
WHERE id = $5
