-- Counts claimed tasks in their tenants; one that had none starts its fair share no
-- lower than the clock $3 (store/fair.rs). Counters are locked in id order, one order
-- across claims; claim.rs bounds the wait for one another transaction holds, and else
-- passes it over (`SKIP LOCKED`): the caller leaves that tenant's tasks queued. Returns
-- the tenants counted.
--
-- $1 tenant ids (bigint[], ascending)
-- $2 tasks claimed in each (int[], matching $1)
-- $3 the fair clock the claim read (bigint)
WITH locked AS (
    SELECT id FROM tenants WHERE id = ANY($1) ORDER BY id FOR UPDATE)
UPDATE tenants AS n SET running = n.running + u.n,
    fair_used = CASE WHEN n.running = 0 THEN greatest(n.fair_used, $3::bigint * n.weight)
                     ELSE n.fair_used END
FROM unnest($1::bigint[], $2::int[]) AS u(id, n), locked l
WHERE n.id = u.id AND l.id = u.id
RETURNING n.id
