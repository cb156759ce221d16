-- Of the tasks named, the first that is not a child of a parent (missing ones included).
--
-- $1 the ids
-- $2 parent id
SELECT n.id FROM unnest($1::bigint[]) AS n(id)
LEFT JOIN tasks t ON t.id = n.id AND t.parent_id = $2
WHERE t.id IS NULL ORDER BY n.id LIMIT 1
