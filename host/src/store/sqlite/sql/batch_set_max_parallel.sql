-- Sets a batch's max_parallel; a paused batch keeps it for its resume, and stays at 0.
--
-- ?1 max_parallel, or NULL for no limit
-- ?2 batch id
UPDATE batches SET
    max_parallel = CASE WHEN paused THEN 0 ELSE ?1 END,
    resume_max_parallel = CASE WHEN paused THEN ?1 ELSE resume_max_parallel END
WHERE id = ?2;
