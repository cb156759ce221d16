-- Ends as cancelled claimed tasks that their node hands back unstarted and whose
-- cancellation was asked, as if never claimed: the claim's attempt is not counted. The
-- caller has locked the tasks' rows.
--
-- $1 now (ended_at)
-- $2 task ids (bigint[])
--
-- state: 5 cancelled.
UPDATE tasks SET state = 5, attempts = attempts - 1, ended_at = $1,
    outcome = 'cancelled', error = 'cancelled before it ran',
    lease_node = NULL, lease_token = NULL
WHERE id = ANY($2)
