-- When the next held tenant is let go (store/budget.rs): the claim loop sleeps until then.
-- Reads only the holds still to end, along tenants_hold_ends.
--
-- ?1 now: only times after it
SELECT MIN(held_until) FROM tenants INDEXED BY tenants_hold_ends
WHERE held_until > 0 AND held_until > ?1
