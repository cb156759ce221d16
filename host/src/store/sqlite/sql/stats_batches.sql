-- The batches with most tasks not ended, at most ?1: id, name, open tasks, paused.
SELECT o.batch_id, b.name, o.open, b.paused
FROM (SELECT batch_id, SUM(open) AS open FROM batch_orders GROUP BY batch_id
      HAVING SUM(open) > 0) o
JOIN batches b ON b.id = o.batch_id
ORDER BY o.open DESC, o.batch_id
LIMIT ?1
