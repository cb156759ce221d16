-- Takes out of their batches' usage what the tasks pruning deletes next store, before
-- they and their attempts are deleted in the same transaction.
--
-- $1 the ids of the tasks pruned (bigint[])
WITH gone AS (
    SELECT t.batch_id, octet_length(t.input) AS input,
           coalesce(octet_length(t.output), 0) AS output,
           (SELECT coalesce(sum(coalesce(octet_length(a.error), 0)
                                + coalesce(octet_length(a.stdout), 0)
                                + coalesce(octet_length(a.stderr), 0)
                                + coalesce((SELECT sum(octet_length(l->>'message'))
                                            FROM jsonb_array_elements(a.logs::jsonb) l), 0)), 0)
            FROM attempts a WHERE a.task_id = t.id) AS text
    FROM tasks t WHERE t.id = ANY($1::bigint[])
)
UPDATE batch_quotas AS q SET used_tasks = greatest(q.used_tasks - p.tasks, 0),
    used_input = greatest(q.used_input - p.input, 0),
    used_output = greatest(q.used_output - p.output, 0),
    used_text = greatest(q.used_text - p.text, 0)
FROM (SELECT batch_id, count(*) AS tasks, sum(input) AS input, sum(output) AS output,
             sum(text) AS text
      FROM gone GROUP BY batch_id) AS p
WHERE q.batch_id = p.batch_id
