-- `qhost bench fill` on PostgreSQL: the same queue as bench_fill_sqlite.sql describes,
-- from fill_params (n, module, limits, now), with the ready queue and the leases.
INSERT INTO tasks (id, batch_id, module, input, ord, group_key, priority, vseq, state,
    attempts, max_attempts, backoff_ms, limits, mounts, not_before, submitted_at, claimed_at,
    ended_at, lease_node, lease_token, outcome, error)
SELECT i + 1, b + 1, module, '\x'::bytea, ord, CASE WHEN b % 2 = 1 THEN 'g' || (i % 200) END,
    0, j, state, CASE WHEN state IN (2, 3, 4) THEN 1 ELSE 0 END, 3, 1000, limits, '[]', 0,
    submitted, CASE WHEN state = 2 THEN now - 1000000 END,
    CASE WHEN state >= 3 THEN submitted + 500000 END,
    CASE WHEN state = 2 THEN 'bench-1' END, CASE WHEN state = 2 THEN 1 END, outcome,
    CASE WHEN state = 4 THEN 'the bench says so' END
FROM (
    SELECT *,
        CASE WHEN phase < 3 THEN phase WHEN i % 100 < 94 THEN 3 WHEN i % 100 < 98 THEN 4
             ELSE 5 END AS state,
        CASE WHEN phase < 3 THEN NULL WHEN i % 100 < 94 THEN 'succeeded'
             WHEN i % 100 < 96 THEN 'trap' WHEN i % 100 < 97 THEN 'guest-error'
             WHEN i % 100 < 98 THEN 'timeout' ELSE 'cancelled' END AS outcome,
        now - (n - i) * (86400000000 / n) AS submitted
    FROM (
        SELECT *,
            CASE WHEN NOT open OR j < 400 THEN 0 WHEN j < 700 THEN 1 ELSE 2 END AS ord,
            CASE WHEN NOT open OR j < 400 THEN 3
                 WHEN j >= 700 THEN 0
                 WHEN j - 400 < 2 AND NOT paused THEN 2
                 WHEN j - 400 < 100 THEN 3
                 ELSE 1 END AS phase
        FROM (
            SELECT i, i / 1000 AS b, i % 1000 AS j, (i / 1000) % 10 = 9 AS open,
                   (i / 1000) % 100 = 99 AS paused, p.*
            FROM fill_params p, generate_series(0, p.n - 1) i
        ) t
    ) u
) v;
SELECT setval(pg_get_serial_sequence('tasks', 'id'), (SELECT max(id) FROM tasks));

INSERT INTO leases (task_id, node, expires, started_at)
SELECT id, 'bench-1', (SELECT now FROM fill_params) + 3600000000,
    CASE WHEN vseq % 2 = 1 THEN claimed_at + 100000 END
FROM tasks WHERE state = 2;
INSERT INTO ready (task_id, batch_id, group_key, priority, vseq, not_before, submitted_at)
SELECT id, batch_id, group_key, priority, vseq, not_before, submitted_at FROM tasks
WHERE state = 1;
INSERT INTO dead_letters
SELECT id, state, batch_id, group_key, module, outcome, submitted_at FROM tasks
WHERE state IN (4, 5);

INSERT INTO batches (id, handle_hash, name, priority, max_parallel, halt_on_failure, sealed,
    created_at, running, next_vseq, paused)
SELECT batch_id, sha256(batch_id::text::bytea), 'bench-' || batch_id, 0,
    CASE WHEN batch_id % 100 = 0 THEN 0 END, FALSE, TRUE, MIN(submitted_at),
    COUNT(*) FILTER (WHERE state = 2), 1000, batch_id % 100 = 0
FROM tasks GROUP BY batch_id;
SELECT setval(pg_get_serial_sequence('batches', 'id'), (SELECT max(id) FROM batches));

INSERT INTO batch_orders (batch_id, ord, open)
SELECT batch_id, ord, COUNT(*) FROM tasks WHERE state < 3 GROUP BY batch_id, ord;

INSERT INTO groups (key, lim, running, paused, resume_lim)
SELECT 'g' || k, CASE WHEN k = 199 THEN 0 ELSE 1 + k % 4 END, 0, k = 199, 1 + k % 4
FROM generate_series(0, 199) k;
UPDATE groups SET running = (SELECT COUNT(*) FROM tasks t
    WHERE t.state = 2 AND t.group_key = groups.key);

INSERT INTO attempts (task_id, batch_id, attempt, node, slot, lease_token, group_key, ord,
    started_at, ended_at, outcome, error)
SELECT id, batch_id, 1, 'bench-1', id % 8, 1, group_key, ord, ended_at - 400000, ended_at,
    outcome, error
FROM tasks WHERE state IN (3, 4) ORDER BY ended_at, id;
