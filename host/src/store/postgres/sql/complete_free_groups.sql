-- Frees the slots ended attempts held in their groups, and holds a group a deferred
-- attempt asked to (store/hold.rs) until then, or its later hold: in one statement, so
-- that completions lock group rows in one order.
--
-- $1 group keys (text[])
-- $2 slots freed in each (int[], matching $1)
-- $3 the hold each is asked (bigint[], matching $1; 0: none)
UPDATE groups AS g SET running = g.running - u.n, held_until = greatest(g.held_until, u.hold)
FROM unnest($1::text[], $2::int[], $3::bigint[]) AS u(key, n, hold) WHERE g.key = u.key
