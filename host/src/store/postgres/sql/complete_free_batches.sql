-- Frees the slots ended attempts held in their limited batches (batches.running counts
-- claimed tasks only where max_parallel is set).
--
-- $1 batch ids (bigint[])
-- $2 slots freed in each (int[], matching $1)
UPDATE batches AS b SET running = b.running - u.n
FROM unnest($1::bigint[], $2::int[]) AS u(id, n) WHERE b.id = u.id
