-- Ends a claimed task for good and drops its lease.
--
-- ?1 state: 3 succeeded, 4 failed or 5 cancelled; listed as it
-- ?2 now (ended_at)
-- ?3 outcome
-- ?4 error, or NULL
-- ?5 output, or NULL
-- ?6 task id
-- OR FAIL: no statement journal (see the driver's mod.rs).
UPDATE OR FAIL tasks SET state = ?1, listed = ?1, ended_at = ?2, outcome = ?3,
    error = ?4, output = ?5,
    lease_node = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = ?6;
