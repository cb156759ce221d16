-- Puts a task its node handed back unstarted back in the queue, as if it had never been
-- claimed. The attempt it never began is not counted.
--
-- ?1 task id
--
-- state: 1 ready.
UPDATE tasks SET state = 1, attempts = attempts - 1, claimed_at = NULL,
    lease_node = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = ?1;
