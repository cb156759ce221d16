-- The first group from a key on (>=) that has room, and its room, along groups_open; with
-- its rate (limit, period, burst: NULLs when none) and tat, whose tokens may leave it less.
--
-- ?1 the key to start from
SELECT key, lim - running, rate_limit, rate_period, rate_burst, rate_tat
FROM groups INDEXED BY groups_open
WHERE running < lim AND key >= ?1
ORDER BY key LIMIT 1;
