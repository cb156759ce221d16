-- How many tasks of one stored state a list's filter names, up to a cap, for the states
-- whose list state is the stored one (0 waiting at its gate, 3, 4, 5 ended): read from
-- the filter's index alone when no outcome is asked. The caller names the index in place
-- of the index comment below and appends the same clauses as for sql/task_list.sql,
-- then the cap (see `lists.rs`).
--
-- ?1 stored state, which is the listed one for these states (see
--    migrations/0012_listed.sql); ?2 submitted at or after; ?3 submitted before
SELECT COUNT(*) FROM (
    SELECT 1 FROM tasks t /* index */
    WHERE t.listed = ?1 AND t.submitted_at >= ?2 AND t.submitted_at < ?3
