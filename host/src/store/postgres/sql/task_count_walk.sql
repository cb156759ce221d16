-- How many tasks a list's filter names in each of the stored states 0 (waiting at a
-- gate) and 3, 4, 5 (ended), up to a cap in all: the states whose list state is the
-- stored one (list_code in task_list.sql), so that only the state is read, along the
-- index of the filter.
--
-- $1 stored states (int[]); $2 submitted at or after; $3 submitted before; $4 batch,
-- $5 group, $6 module digests, $7 outcomes, each NULL for any; $8 cap
SELECT state, COUNT(*) FROM (
    SELECT t.state
    FROM tasks t
    WHERE t.state = ANY($1::int[])
      AND t.submitted_at >= $2 AND t.submitted_at < $3
      AND ($4::bigint IS NULL OR t.batch_id = $4)
      AND ($5::text IS NULL OR t.group_key = $5)
      AND ($6::text[] IS NULL OR t.module = ANY($6))
      AND ($7::text[] IS NULL OR t.outcome = ANY($7))
    LIMIT $8
) x
GROUP BY 1
