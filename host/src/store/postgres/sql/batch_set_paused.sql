-- Pauses or resumes a batch, and counts its claimed tasks again (batches.running is kept
-- only while max_parallel is set). A paused batch has max_parallel 0, which claims read as
-- no room; the max_parallel it gets back on resume is kept in resume_max_parallel. Pausing
-- a paused batch, or resuming one that runs, changes nothing else. The caller holds the
-- batch's gate lock and its row: no claim or completion of it is under way.
--
-- $1 true to pause, false to resume
-- $2 batch id
--
-- state: 2 claimed.
UPDATE batches SET
    resume_max_parallel = CASE WHEN $1 AND NOT paused THEN max_parallel
                               ELSE resume_max_parallel END,
    max_parallel = CASE WHEN $1 THEN 0
                        WHEN paused THEN resume_max_parallel
                        ELSE max_parallel END,
    paused = $1,
    running = (SELECT COUNT(*) FROM tasks WHERE batch_id = $2 AND state = 2)
WHERE id = $2
