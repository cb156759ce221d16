-- The first group from a key on (>=) that has room, and its room, along groups_open; with
-- its rate (limit, period, burst: NULLs when none) and tat, whose tokens may leave it less.
-- A group whose rate has no token now has no room (store/rate.rs: Bucket::next_token), so
-- the look behind the scan passes it over as a full one; so does a held one
-- (store/hold.rs).
--
-- ?1 the key to start from
-- ?2 now
SELECT key, lim - running, rate_limit, rate_period, rate_burst, rate_tat
FROM groups INDEXED BY groups_open
WHERE running < lim AND key >= ?1 AND held_until <= ?2
  AND (rate_limit IS NULL
       OR rate_tat - (rate_burst - 1) * max(1, rate_period / rate_limit) <= ?2)
ORDER BY key LIMIT 1;
