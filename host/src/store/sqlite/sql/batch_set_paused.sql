-- Pauses or resumes a batch. A paused batch has max_parallel 0, which the claim reads as no
-- room; the max_parallel it gets back on resume is kept in resume_max_parallel. Pausing a
-- paused batch, or resuming one that runs, changes nothing.
--
-- ?1 1 to pause, 0 to resume
-- ?2 batch id
UPDATE batches SET
    resume_max_parallel = CASE WHEN ?1 AND NOT paused THEN max_parallel
                               ELSE resume_max_parallel END,
    max_parallel = CASE WHEN ?1 THEN 0
                        WHEN paused THEN resume_max_parallel
                        ELSE max_parallel END,
    paused = ?1
WHERE id = ?2;
