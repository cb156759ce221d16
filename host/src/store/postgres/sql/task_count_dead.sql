-- How many failed (4) and cancelled (5) tasks a list's filter names, up to a cap in all,
-- from the dead letters alone (`migrations/0012_dead_letters.sql`): they hold every column
-- the filter reads.
--
-- $1 stored states (int[]); $2 submitted at or after; $3 submitted before; $4 batch,
-- $5 group, $6 module digests, $7 outcomes, each NULL for any; $8 cap
SELECT state, COUNT(*) FROM (
    SELECT d.state
    FROM dead_letters d
    WHERE d.state = ANY($1::int[])
      AND d.submitted_at >= $2 AND d.submitted_at < $3
      AND ($4::bigint IS NULL OR d.batch_id = $4)
      AND ($5::text IS NULL OR d.group_key = $5)
      AND ($6::text[] IS NULL OR d.module = ANY($6))
      AND ($7::text[] IS NULL OR d.outcome = ANY($7))
    LIMIT $8
) x
GROUP BY 1
