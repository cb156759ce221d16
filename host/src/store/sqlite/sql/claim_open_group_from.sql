-- The first group from a key on (>=) that has room, and its room, along groups_open.
--
-- ?1 the key to start from
SELECT key, lim - running FROM groups INDEXED BY groups_open
WHERE running < lim AND key >= ?1
ORDER BY key LIMIT 1;
