-- Puts a task its node handed back unstarted back in the queue, as if it had never been
-- claimed. The attempt it never began is not counted. It is ready at its batch's gate, and
-- waits behind it when a re-drive has reopened a lower order since its claim.
--
-- ?1 task id
--
-- state: 1 ready, 0 waiting.
-- OR FAIL: no statement journal (see the driver's mod.rs).
UPDATE OR FAIL tasks SET attempts = attempts - 1, claimed_at = NULL,
    lease_node = NULL, lease_token = NULL, lease_expires = NULL,
    state = CASE WHEN ord = (SELECT MIN(ord) FROM batch_orders o WHERE o.batch_id = tasks.batch_id)
                 THEN 1 ELSE 0 END
WHERE id = ?1;
