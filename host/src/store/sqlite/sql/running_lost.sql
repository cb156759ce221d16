-- The claimed tasks whose lease expired, or that a node holds (one restarting), with what
-- ending their attempts needs.
--
-- ?1 now: leases that expired before it are lost
-- ?2 node name, or NULL: its leases are lost whatever their expiry
--
-- Columns, in the order complete.rs's running_row reads them: id, batch, order, group,
-- attempts, the attempt it may run up to (its max attempts counted from its last
-- re-drive, and one more per deferral: a deferred attempt is not charged), backoff,
-- whether cancellation was asked, lease token and node, when the attempt started (its
-- start mark, or else its claim), and how many times it was deferred.
--
-- state: 2 claimed (reserved or running: the task has a lease), along tasks_running.
SELECT id, batch_id, ord, group_key, attempts, redriven_after + max_attempts + deferrals,
       backoff_ms, cancel_requested, lease_token, lease_node, coalesce(started_at, claimed_at),
       deferrals
FROM tasks INDEXED BY tasks_running
WHERE state = 2 AND (lease_expires < ?1 OR lease_node = ?2);
