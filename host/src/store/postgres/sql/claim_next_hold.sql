-- When the next held group with room and ready tasks is let go (store/hold.rs): the claim
-- loop sleeps until then. Reads only the holds still to end (groups_hold_ends), and one ready
-- task of each at most, along ready_group.
--
-- $1 now: only times after it
--
-- Every task in the ready table has state 1 (ready).
SELECT MIN(g.held_until)
FROM groups g
CROSS JOIN LATERAL (SELECT 1 FROM ready r
                    WHERE r.group_key IS NOT NULL AND r.group_key = g.key LIMIT 1) AS has
WHERE g.held_until > 0 AND g.held_until > $1 AND g.running < g.lim
