-- Sets a batch's max_parallel, and counts its claimed tasks again (batches.running is kept
-- only while max_parallel is set); a paused batch keeps it for its resume, and stays at 0.
-- The caller holds the batch's gate lock and its row: no claim or completion of it is
-- under way.
--
-- $1 max_parallel, or NULL for no limit
-- $2 batch id
--
-- state: 2 claimed.
UPDATE batches SET
    max_parallel = CASE WHEN paused THEN 0 ELSE $1 END,
    resume_max_parallel = CASE WHEN paused THEN $1 ELSE resume_max_parallel END,
    running = (SELECT COUNT(*) FROM tasks WHERE batch_id = $2 AND state = 2)
WHERE id = $2
