-- Tasks a list shows, of one stored state, as reads report them (the columns of
-- task_get.sql), with the state lists filter by. The caller names the index to walk in
-- place of the index comment below (`INDEXED BY tasks_list_batch`: SQLite's planner,
-- without statistics, picks the state's index for a batch), appends one `AND t.column ...`
-- clause per other filter given, then the order and the limit (see `lists.rs`).
--
-- ?1 stored state: 0 waiting (behind its batch's gate), 1 ready, 2 claimed,
--    3 succeeded, 4 failed, 5 cancelled; a claimed task is listed as ready, so a read of
--    the claimed walks tasks_running instead (migrations/0012_listed.sql)
-- ?2 now: a task due after it is waiting
-- ?3 the list states wanted, a JSON array of codes
-- ?4 submitted at or after; ?5 submitted before
-- ?6, ?7 the position a page ended at: rows strictly before it, newest first
--
-- The error is read cut to 1,024 characters, the most a list gives (LIST_CUT in
-- api/attempt_page.rs), with its whole length in bytes (after the input's size), so that
-- a page of tasks that failed with long errors is not read whole into memory.
--
-- list_code: the state as reads report it (task_get.sql, TaskState::shown), which the
-- list filters by.
SELECT t.id, t.batch_id, t.module, t.ord, t.group_key, t.priority,
       CASE WHEN t.state = 2 AND t.started_at IS NULL THEN 6
            WHEN t.state = 1 AND (
                EXISTS (SELECT 1 FROM batches b WHERE b.id = t.batch_id AND b.max_parallel = 0)
                OR EXISTS (SELECT 1 FROM groups g WHERE g.key = t.group_key AND g.lim = 0)) THEN 7
            WHEN t.state = 1 AND t.not_before > ?2 THEN 0
            ELSE t.state END AS list_code,
       t.attempts, t.redriven_after + t.max_attempts + t.deferrals, t.submitted_at, t.ended_at, t.outcome,
       substr(t.error, 1, 1024), length(t.output),
       CASE WHEN t.state IN (0, 1) AND t.not_before > 0 THEN t.not_before END, m.name, length(t.input),
       length(CAST(t.error AS BLOB)),
       t.task_key, t.cost
FROM tasks t /* index */
LEFT JOIN modules m ON m.digest = t.module
WHERE t.listed = (CASE ?1 WHEN 2 THEN 1 ELSE ?1 END) AND t.state = ?1
  AND list_code IN (SELECT value FROM json_each(?3))
  AND t.submitted_at >= ?4 AND t.submitted_at < ?5
  AND (t.submitted_at, t.id) < (?6, ?7)
