-- Batches a list shows, newest first, along batches_name when a name is given, else
-- batches_created.
--
-- $1 the states wanted, codes: 0 open (not sealed), 1 sealed with tasks not ended,
--    2 ended (no task left to end, and sealed or with tasks): BatchState::of
-- $2 created at or after; $3 created before
-- $4, $5 the position a page ended at: rows strictly before it
-- $6 batch id, $7 name, $9 tenant; each NULL for any
-- $8 limit
SELECT b.id
FROM batches b
CROSS JOIN LATERAL (
    SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM batch_orders o
                                 WHERE o.batch_id = b.id AND o.open > 0)
                     AND (b.sealed OR EXISTS (SELECT 1 FROM tasks t WHERE t.batch_id = b.id))
                THEN 2
                WHEN b.sealed THEN 1
                ELSE 0 END AS state_code
) s
WHERE s.state_code = ANY($1::int[])
  AND b.created_at >= $2 AND b.created_at < $3
  AND (b.created_at, b.id) < ($4, $5)
  AND ($6::bigint IS NULL OR b.id = $6)
  AND ($7::text IS NULL OR b.name = $7)
  AND ($9::bigint IS NULL OR b.tenant_id = $9)
ORDER BY b.created_at DESC, b.id DESC
LIMIT $8
