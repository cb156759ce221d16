-- Puts a task whose attempt suspended back to wait for its children that have not ended
-- (the edges from them, store/spawn.rs), with the state it saved; the attempt is given
-- back (its max_attempts rises by one): waiting is not a failure. Ready at once when
-- none is left and its order is its batch's gate.
--
-- ?1 the saved state
-- ?2 task id
--
-- state: 0 waiting, 1 ready; a dependency is open while its state is below 3 (ended).
-- OR FAIL: no statement journal (see the driver's mod.rs).
UPDATE OR FAIL tasks SET saved_state = ?1, outcome = 'suspended', error = NULL,
    max_attempts = max_attempts + 1,
    lease_node = NULL, lease_token = NULL, lease_expires = NULL,
    deps_open = (SELECT COUNT(*) FROM task_edges e JOIN tasks d ON d.id = e.dep_id
                 WHERE e.task_id = ?2 AND d.state < 3),
    state = CASE WHEN (SELECT COUNT(*) FROM task_edges e JOIN tasks d ON d.id = e.dep_id
                       WHERE e.task_id = ?2 AND d.state < 3) = 0
                  AND ord = (SELECT MIN(ord) FROM batch_orders o WHERE o.batch_id = tasks.batch_id)
                 THEN 1 ELSE 0 END
WHERE id = ?2;
