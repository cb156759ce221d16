-- Records the batch a schedule's tick opened.
--
-- ?1 schedule id, ?2 batch id
UPDATE schedules SET last_batch = ?2 WHERE id = ?1
