-- What a pending task may wait on: its stored state (0 waiting at the gate, 1 ready),
-- when it is due (0: at once), its attempts, the lowest order of its batch below its own
-- with open tasks and how many, its batch's pause, limit (0 while paused) and claimed
-- tasks, its group's key, pause, limit (0 while paused) and claimed tasks, its rate
-- (limit, period, burst: NULLs when none) and tat, how many tasks it runs after have not
-- ended (deps_open), when its group's hold ends (store/hold.rs), and its batch's tenant's
-- name, running limit, claimed tasks and the end of its budget's hold (store/budget.rs).
--
-- ?1 task id
SELECT t.state, t.not_before, t.attempts,
       (SELECT o.ord FROM batch_orders o
        WHERE o.batch_id = t.batch_id AND o.ord < t.ord AND o.open > 0 ORDER BY o.ord LIMIT 1),
       (SELECT o.open FROM batch_orders o
        WHERE o.batch_id = t.batch_id AND o.ord < t.ord AND o.open > 0 ORDER BY o.ord LIMIT 1),
       b.paused, b.max_parallel, b.running,
       t.group_key, g.paused, g.lim, g.running,
       g.rate_limit, g.rate_period, g.rate_burst, g.rate_tat, t.deps_open, g.held_until,
       n.name, n.max_running, n.running, n.held_until
FROM tasks t
JOIN batches b ON b.id = t.batch_id
LEFT JOIN groups g ON g.key = t.group_key
LEFT JOIN tenants n ON n.id = b.tenant_id
WHERE t.id = ?1
