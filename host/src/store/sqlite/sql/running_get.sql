-- One claimed task, with what ending or handing back its attempt needs. The caller
-- checks the lease token: a task whose lease was rescued meanwhile is no longer the
-- caller's to end.
--
-- ?1 task id
--
-- Columns, in the order complete.rs's running_row reads them: id, batch, order, group,
-- attempts, the attempt it may run up to (its max attempts counted from its last
-- re-drive, and one more per deferral: a deferred attempt is not charged), backoff,
-- whether cancellation was asked, lease token and node, when the attempt started (its
-- start mark, or else its claim), and how many times it was deferred.
--
-- state: 2 claimed (reserved or running: the task has a lease).
SELECT id, batch_id, ord, group_key, attempts, redriven_after + max_attempts + deferrals,
       backoff_ms, cancel_requested, lease_token, lease_node, coalesce(started_at, claimed_at),
       deferrals
FROM tasks WHERE id = ?1 AND state = 2;
