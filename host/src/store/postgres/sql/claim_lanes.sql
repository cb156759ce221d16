-- The claim's lanes (store/fair.rs): the tenants with a ready task due at $1, not held and
-- with room, each with what its standing needs, and the fair clock. One seek per tenant
-- with ready tasks along ready_lanes (the admin's tasks are not in it), then one for a
-- due one.
--
-- Columns, as share.rs reads them: id, weight, fair_used, running, slot_micros,
-- attempts_ended, room (NULL: no limit), the fair clock.
WITH RECURSIVE lanes AS (
    (SELECT tenant_id FROM ready WHERE tenant_id IS NOT NULL ORDER BY tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT r.tenant_id FROM ready r
            WHERE r.tenant_id IS NOT NULL AND r.tenant_id > l.tenant_id
            ORDER BY r.tenant_id LIMIT 1)
    FROM lanes l WHERE l.tenant_id IS NOT NULL
)
SELECT n.id, n.weight, n.fair_used, n.running, n.slot_micros, n.attempts_ended,
       n.max_running - n.running, (SELECT fair_clock FROM scheduler)
FROM lanes l JOIN tenants n ON n.id = l.tenant_id
WHERE n.held_until <= $1
  AND (n.max_running IS NULL OR n.running < n.max_running)
  AND EXISTS (SELECT 1 FROM ready r
              WHERE r.tenant_id IS NOT NULL AND r.tenant_id = n.id AND r.not_before <= $1)
