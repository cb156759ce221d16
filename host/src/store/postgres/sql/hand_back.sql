-- Puts claimed tasks that their node hands back unstarted in the ready queue again, as
-- before the claim: the claim's attempt is not counted. The caller has locked the tasks'
-- rows.
--
-- $1 task ids (bigint[])
--
-- state: 1 ready (also in the ready table).
WITH back AS (
    UPDATE tasks SET state = 1, attempts = attempts - 1,
        lease_node = NULL, lease_token = NULL
    WHERE id = ANY($1)
    RETURNING id, batch_id, group_key, priority, vseq, not_before)
INSERT INTO ready (task_id, batch_id, group_key, priority, vseq, not_before)
SELECT * FROM back
