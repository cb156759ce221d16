-- Counts claimed tasks in their limited batches (batches.running is kept only where
-- max_parallel is set). The caller has locked these batch rows.
--
-- $1 batch ids (bigint[])
-- $2 tasks claimed in each (int[], matching $1)
UPDATE batches AS b SET running = b.running + u.n
FROM unnest($1::bigint[], $2::int[]) AS u(id, n) WHERE b.id = u.id
