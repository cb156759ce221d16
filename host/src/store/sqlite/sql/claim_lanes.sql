-- The claim's lanes (store/fair.rs): the tenants with a ready task due at ?1, not held and
-- with room, each with what its standing needs. One seek per tenant with ready tasks
-- along tasks_lanes (the admin's tasks are not in it), then one for a due one.
--
-- Columns, as share.rs reads them: id, weight, fair_used, running, slot_micros,
-- attempts_ended, room (NULL: no limit).
--
-- state: 1 ready.
WITH RECURSIVE lanes(id) AS (
    SELECT (SELECT tenant_id FROM tasks INDEXED BY tasks_lanes
            WHERE state = 1 AND tenant_id IS NOT NULL
            ORDER BY tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT t.tenant_id FROM tasks t INDEXED BY tasks_lanes
            WHERE t.state = 1 AND t.tenant_id IS NOT NULL AND t.tenant_id > lanes.id
            ORDER BY t.tenant_id LIMIT 1)
    FROM lanes WHERE lanes.id IS NOT NULL
)
SELECT n.id, n.weight, n.fair_used, n.running, n.slot_micros, n.attempts_ended,
       n.max_running - n.running
FROM lanes JOIN tenants n ON n.id = lanes.id
WHERE n.held_until <= ?1
  AND (n.max_running IS NULL OR n.running < n.max_running)
  AND EXISTS (SELECT 1 FROM tasks t INDEXED BY tasks_lanes
              WHERE t.state = 1 AND t.tenant_id IS NOT NULL AND t.tenant_id = n.id
                AND t.not_before <= ?1);
