-- Marks claimed tasks started on their node's slots: from reserved to running. A task
-- whose lease its token no longer holds is left alone.
--
-- $1 task ids (bigint[])
-- $2 lease tokens (bigint[], matching $1)
-- $3 start times (bigint[], matching $1)
UPDATE leases AS l SET started_at = u.at
FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS u(id, token, at),
    tasks AS t
WHERE l.task_id = u.id AND t.id = u.id AND t.lease_token = u.token
