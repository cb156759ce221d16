-- The tasks not ended, each count from a small table, never from the ended tasks: open
-- (every task not ended, from the open counts per batch and order), ready (the ready
-- queue), held (ready, in a batch or a group with a limit of 0, which a pause sets; in
-- the same read of the queue), reserved (leased without a start mark) and running
-- (leased and started on a slot), delayed (ready, not held, due after now on the
-- database's clock, which reads show waiting: TaskState::shown). Waiting tasks are the
-- open ones that are none of the others, and the delayed ones.
SELECT
    (SELECT coalesce(SUM(open), 0)::bigint FROM batch_orders),
    q.ready,
    q.held,
    l.reserved,
    l.running,
    q.delayed
FROM (SELECT COUNT(*) AS ready,
             COUNT(*) FILTER (
                 WHERE r.batch_id IN (SELECT id FROM batches WHERE max_parallel = 0)
                    OR r.group_key IN (SELECT key FROM groups WHERE lim = 0)) AS held,
             COUNT(*) FILTER (
                 WHERE r.not_before > (extract(epoch FROM clock_timestamp()) * 1000000)::bigint
                   AND r.batch_id NOT IN (SELECT id FROM batches WHERE max_parallel = 0)
                   AND (r.group_key IS NULL
                        OR r.group_key NOT IN (SELECT key FROM groups WHERE lim = 0)))
                 AS delayed
      FROM ready r) q,
     (SELECT COUNT(*) FILTER (WHERE started_at IS NULL) AS reserved,
             COUNT(*) FILTER (WHERE started_at IS NOT NULL) AS running
      FROM leases) l
