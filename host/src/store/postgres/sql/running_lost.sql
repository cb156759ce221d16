-- Locks the claimed tasks whose lease expired, or that a node holds (one restarting),
-- and reads what ending their attempts needs. Rows another transaction holds are skipped:
-- the next rescue takes them (a restarting node locks its own first, `running_lock_node`).
--
-- $1 now: leases that expired before it are lost
-- $2 node name (or NULL): its leases are lost whatever their expiry
--
-- Columns, in the order `running_row` reads them: id, batch, order, group, attempts,
-- the attempt it may run up to (its max attempts counted from its last re-drive, and
-- one more per deferral),
-- backoff, whether cancellation was asked, lease token and node, when the attempt started
-- (its start mark, or else its claim), whether its batch has a limit, whether its
-- batch halts on failure, whether it has a webhook, how many times it was deferred, and
-- its batch's tenant.
--
-- state: 2 claimed (reserved or running: the task has a lease).
SELECT t.id, t.batch_id, t.ord, t.group_key, t.attempts,
       t.redriven_after + t.max_attempts + t.deferrals, t.backoff_ms,
       t.cancel_requested, t.lease_token, t.lease_node,
       coalesce((SELECT started_at FROM leases WHERE task_id = t.id), t.claimed_at),
       b.max_parallel IS NOT NULL, b.halt_on_failure, b.webhook_url IS NOT NULL, t.deferrals,
       b.tenant_id
FROM tasks t JOIN batches b ON b.id = t.batch_id
WHERE t.state = 2
  AND t.id IN (SELECT task_id FROM leases WHERE expires < $1 OR node = $2)
ORDER BY t.id FOR UPDATE OF t SKIP LOCKED
