-- Takes out of their batches' usage what the oldest chunk of ended tasks stores, before
-- prune_attempts.sql and prune_tasks.sql delete the same chunk in the same transaction.
--
-- ?1 the time before which tasks ended are pruned
-- ?2 at most this many tasks
--
-- state: 3 succeeded, 4 failed, 5 cancelled (ended).
WITH gone AS (
    SELECT t.batch_id, octet_length(t.input) AS input,
           coalesce(octet_length(t.output), 0) AS output,
           (SELECT coalesce(sum(coalesce(octet_length(a.error), 0)
                                + coalesce(octet_length(a.stdout), 0)
                                + coalesce(octet_length(a.stderr), 0)
                                + coalesce((SELECT sum(octet_length(json_extract(l.value, '$.message')))
                                            FROM json_each(a.logs) l), 0)), 0)
            FROM attempts a WHERE a.task_id = t.id) AS text
    FROM tasks t WHERE t.state >= 3 AND t.ended_at < ?1 ORDER BY t.ended_at LIMIT ?2
)
UPDATE batch_quotas SET used_tasks = max(used_tasks - p.tasks, 0),
    used_input = max(used_input - p.input, 0),
    used_output = max(used_output - p.output, 0),
    used_text = max(used_text - p.text, 0)
FROM (SELECT batch_id, count(*) AS tasks, sum(input) AS input, sum(output) AS output,
             sum(text) AS text
      FROM gone GROUP BY batch_id) AS p
WHERE batch_quotas.batch_id = p.batch_id;
