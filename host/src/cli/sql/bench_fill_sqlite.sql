-- `qhost bench fill` on SQLite: a fresh store filled with temp.fill_params.n tasks of
-- 1000 per batch, as a queue looks after a day of work. Batches b % 10 = 9 are open: order
-- 0 ended, order 1 claimed (2), ended (98) and ready (200), order 2 waiting (300); batches
-- b % 100 = 99 of those are paused (their ready tasks held, none claimed); the others
-- ended. Odd batches' tasks are spread over 200 groups, the last one paused. Ended tasks:
-- 94% succeeded, 4% failed (trap, guest-error, timeout), 2% cancelled; each that ran has
-- its attempt in the log. Submissions are spread over the last day.
WITH RECURSIVE s(i) AS (
    SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < (SELECT n FROM temp.fill_params)
),
t AS (
    SELECT i, i / 1000 AS b, i % 1000 AS j, (i / 1000) % 10 = 9 AS open,
           (i / 1000) % 100 = 99 AS paused, p.*
    FROM s, temp.fill_params p
),
u AS (
    SELECT *,
        CASE WHEN NOT open OR j < 400 THEN 0 WHEN j < 700 THEN 1 ELSE 2 END AS ord,
        CASE WHEN NOT open OR j < 400 THEN 3          -- ended, by the mix below
             WHEN j >= 700 THEN 0                       -- waiting behind order 1
             WHEN j - 400 < 2 AND NOT paused THEN 2     -- claimed
             WHEN j - 400 < 100 THEN 3
             ELSE 1 END AS phase
    FROM t
),
v AS (
    SELECT *,
        CASE WHEN phase < 3 THEN phase WHEN i % 100 < 94 THEN 3 WHEN i % 100 < 98 THEN 4
             ELSE 5 END AS state,
        CASE WHEN phase < 3 THEN NULL WHEN i % 100 < 94 THEN 'succeeded'
             WHEN i % 100 < 96 THEN 'trap' WHEN i % 100 < 97 THEN 'guest-error'
             WHEN i % 100 < 98 THEN 'timeout' ELSE 'cancelled' END AS outcome,
        now - (n - i) * (86400000000 / n) AS submitted
    FROM u
)
INSERT INTO tasks (id, batch_id, module, input, ord, group_key, priority, vseq, state,
    listed, attempts, max_attempts, backoff_ms, limits, mounts, not_before, submitted_at, claimed_at,
    ended_at, lease_node, lease_token, lease_expires, outcome, error, started_at)
SELECT i + 1, b + 1, module, x'', ord, CASE WHEN b % 2 = 1 THEN 'g' || (i % 200) END, 0, j,
    state, CASE state WHEN 2 THEN 1 ELSE state END,
    CASE WHEN state IN (2, 3, 4) THEN 1 ELSE 0 END, 3, 1000, limits, '[]', 0,
    submitted, CASE WHEN state = 2 THEN now - 1000000 END,
    CASE WHEN state >= 3 THEN submitted + 500000 END,
    CASE WHEN state = 2 THEN 'bench-1' END, CASE WHEN state = 2 THEN 1 END,
    CASE WHEN state = 2 THEN now + 3600000000 END, outcome,
    CASE WHEN state = 4 THEN 'the bench says so' END,
    CASE WHEN state = 2 AND j % 2 = 1 THEN now - 900000 END
FROM v;

INSERT INTO batches (id, handle_hash, name, priority, max_parallel, halt_on_failure, sealed,
    created_at, running, next_vseq, max_started_order, paused)
SELECT batch_id, randomblob(32), 'bench-' || batch_id, 0,
    CASE WHEN batch_id % 100 = 0 THEN 0 END, 0, 1, MIN(submitted_at),
    SUM(state = 2), 1000, MAX(CASE WHEN state >= 2 THEN ord END), batch_id % 100 = 0
FROM tasks GROUP BY batch_id;

INSERT INTO batch_orders (batch_id, ord, open)
SELECT batch_id, ord, COUNT(*) FROM tasks WHERE state < 3 GROUP BY batch_id, ord;

INSERT INTO groups (key, lim, running, paused, resume_lim)
SELECT 'g' || k, CASE WHEN k = 199 THEN 0 ELSE 1 + k % 4 END, 0, k = 199, 1 + k % 4
FROM (WITH RECURSIVE g(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM g WHERE k < 199)
      SELECT k FROM g);
UPDATE groups SET running = (SELECT COUNT(*) FROM tasks t
    WHERE t.state = 2 AND t.group_key = groups.key);

INSERT INTO attempts (task_id, batch_id, attempt, node, slot, lease_token, group_key, ord,
    started_at, ended_at, outcome, error)
SELECT id, batch_id, 1, 'bench-1', id % 8, 1, group_key, ord, ended_at - 400000, ended_at,
    outcome, error
FROM tasks WHERE state IN (3, 4) ORDER BY ended_at, id;
