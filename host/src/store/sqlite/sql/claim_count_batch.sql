-- Counts a claim's tasks of one batch as running, and raises the highest order of the
-- batch that has started: no task of a lower order may be submitted after.
--
-- ?1 how many of the batch's tasks the claim took
-- ?2 the highest order among them
-- ?3 batch id
UPDATE batches SET running = running + ?1,
    max_started_order = max(coalesce(max_started_order, ?2), ?2)
WHERE id = ?3;
