-- Ends succeeded attempts: each task whose lease its token still holds ends succeeded
-- with its output. Tasks whose lease was lost meanwhile are left alone (stale). Their
-- leases, attempt records, counters and gates are written by the caller.
--
-- $1 now (ended_at)
-- $2 task ids (bigint[])
-- $3 lease tokens (bigint[], matching $2)
-- $4 outputs (bytea[], matching $2)
--
-- state: 2 claimed, 3 succeeded.
--
-- Returns per task ended: id, batch, order, group, attempts, whether its batch has a limit,
-- whether it has a webhook, whether tasks run after it (graph.rs), its batch's tenant.
UPDATE tasks AS t SET state = 3, ended_at = $1, outcome = 'succeeded',
    error = NULL, output = u.output,
    lease_node = NULL, lease_token = NULL
FROM unnest($2::bigint[], $3::bigint[], $4::bytea[]) AS u(id, token, output),
    batches AS b
WHERE t.id = u.id AND t.state = 2 AND t.lease_token = u.token
    AND b.id = t.batch_id
RETURNING t.id, t.batch_id, t.ord, t.group_key, t.attempts,
    b.max_parallel IS NOT NULL, b.webhook_url IS NOT NULL, t.dependents, b.tenant_id
