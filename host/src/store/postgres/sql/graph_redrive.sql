-- Tasks run again after a re-drive: the tasks not started after them wait for them again
-- (out of the ready queue); the dependencies of both are counted anew (those not ended: a
-- parent handed back before it suspended had its open children's edges uncounted). The
-- caller holds their batches' gate locks, which a dependency's end takes before it counts
-- its dependents down: a count here sees every end before it, and every end after it
-- counts down what it counted.
--
-- $1 the ids of the tasks run again (bigint[])
--
-- state: 0 waiting, 1 ready (also in the ready table), 3 and above ended.
WITH again AS (
    UPDATE tasks AS t SET deps_open = c.n, state = 0
    FROM (SELECT e.task_id, (COUNT(*) FILTER (WHERE d.state < 3))::int AS n
          FROM task_edges e JOIN tasks d ON d.id = e.dep_id
          WHERE e.task_id IN (SELECT task_id FROM task_edges
                              WHERE dep_id = ANY($1) AND NOT (task_id = ANY($1)))
          GROUP BY e.task_id) AS c
    WHERE t.id = c.task_id AND t.state IN (0, 1)
    RETURNING t.id),
recounted AS (
    UPDATE tasks AS t SET deps_open = c.n,
        state = CASE WHEN c.n > 0 THEN 0 ELSE t.state END
    FROM (SELECT e.task_id, (COUNT(*) FILTER (WHERE d.state < 3))::int AS n
          FROM task_edges e JOIN tasks d ON d.id = e.dep_id
          WHERE e.task_id = ANY($1) GROUP BY e.task_id) AS c
    WHERE t.id = c.task_id
    RETURNING t.id, t.state)
DELETE FROM ready WHERE task_id IN (SELECT id FROM again)
    OR task_id IN (SELECT id FROM recounted WHERE state = 0)
