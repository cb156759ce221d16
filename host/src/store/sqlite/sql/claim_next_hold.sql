-- When the next held group with room and ready tasks is let go (store/hold.rs): the claim
-- loop sleeps until then. Reads only the holds still to end, along groups_hold_ends.
--
-- ?1 now: only times after it
--
-- state: 1 ready.
SELECT MIN(g.held_until)
FROM groups g INDEXED BY groups_hold_ends
WHERE g.held_until > 0 AND g.held_until > ?1 AND g.running < g.lim
  AND EXISTS (SELECT 1 FROM tasks t INDEXED BY tasks_ready_group
              WHERE t.state = 1 AND t.group_key IS NOT NULL AND t.group_key = g.key);
