-- Batches as reads show them: each one's settings (a paused batch's max_parallel is the
-- one it gets back on resume) with its tasks counted per state, one row per batch and
-- state; a batch without tasks has one row, its state NULL. Its quotas and usage follow.
--
-- $1 batch ids (bigint[])
--
-- state, as task_get.sql reports it (TaskState::shown): 0 waiting (at a gate, or stored
-- ready and not due now), 1 ready, 2 running, 3 succeeded, 4 failed, 5 cancelled,
-- 6 reserved, 7 held.
SELECT b.id, b.name, b.priority,
       CASE WHEN b.paused THEN b.resume_max_parallel ELSE b.max_parallel END,
       b.halt_on_failure, b.sealed, b.created_at, b.paused, c.state, c.count,
       q.quota_tasks, q.quota_input, q.quota_output, q.quota_text,
       q.used_tasks, q.used_input, q.used_output, q.used_text, b.webhook_url,
       q.quota_children, q.quota_depth
FROM batches b
LEFT JOIN batch_quotas q ON q.batch_id = b.id
LEFT JOIN LATERAL (
    SELECT CASE WHEN t.state = 2 AND l.started_at IS NULL THEN 6
                WHEN t.state = 1 AND (
                    b.max_parallel = 0
                    OR EXISTS (SELECT 1 FROM groups g
                               WHERE g.key = t.group_key AND g.lim = 0)) THEN 7
                WHEN t.state = 1 AND t.not_before > (extract(epoch FROM clock_timestamp()) * 1000000)::bigint THEN 0
                ELSE t.state END AS state, COUNT(*) AS count
    FROM tasks t
    LEFT JOIN leases l ON l.task_id = t.id
    WHERE t.batch_id = b.id
    GROUP BY 1
) c ON TRUE
WHERE b.id = ANY($1::bigint[])
