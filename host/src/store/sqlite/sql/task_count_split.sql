-- How many tasks of one stored state, ready (1) or claimed (2), a list's filter names in
-- each state, up to a cap: list_code as in task_list.sql, read from each task. The
-- caller names the index in place of the index comment below and appends the same
-- clauses as for task_list.sql, then the cap and the grouping (see `lists.rs`).
--
-- ?1 stored state (a claimed task is listed as ready: migrations/0012_listed.sql);
-- ?2 submitted at or after; ?3 submitted before; ?4 now; ?5 the list states wanted, a
-- JSON array of codes (as TaskState::code)
SELECT list_code, COUNT(*) FROM (
    SELECT CASE WHEN t.state = 2 AND t.started_at IS NULL THEN 6
                WHEN t.state = 1 AND (
                    EXISTS (SELECT 1 FROM batches b
                            WHERE b.id = t.batch_id AND b.max_parallel = 0)
                    OR EXISTS (SELECT 1 FROM groups g
                               WHERE g.key = t.group_key AND g.lim = 0)) THEN 7
                WHEN t.state = 1 AND t.not_before > ?4 THEN 0
                ELSE t.state END AS list_code
    FROM tasks t /* index */
    WHERE t.listed = (CASE ?1 WHEN 2 THEN 1 ELSE ?1 END) AND t.state = ?1
      AND t.submitted_at >= ?2 AND t.submitted_at < ?3
      AND list_code IN (SELECT value FROM json_each(?5))
