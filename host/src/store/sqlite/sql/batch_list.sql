-- Batches a list shows, newest first, by id. The caller appends `AND b.name = ?` when
-- a name is given (so that SQLite walks batches_name, else batches_created), then the
-- order and the limit (see `lists.rs`).
--
-- ?1 the states wanted, a JSON array of codes: 0 open (not sealed), 1 sealed with tasks
--    not ended, 2 ended (no task left to end, and sealed or with tasks): BatchState::of
-- ?2 created at or after; ?3 created before
-- ?4, ?5 the position a page ended at: rows strictly before it
SELECT b.id,
       CASE WHEN NOT EXISTS (SELECT 1 FROM batch_orders o WHERE o.batch_id = b.id AND o.open > 0)
                 AND (b.sealed OR EXISTS (SELECT 1 FROM tasks t WHERE t.batch_id = b.id)) THEN 2
            WHEN b.sealed THEN 1
            ELSE 0 END AS state_code
FROM batches b
WHERE state_code IN (SELECT value FROM json_each(?1))
  AND b.created_at >= ?2 AND b.created_at < ?3
  AND (b.created_at, b.id) < (?4, ?5)
