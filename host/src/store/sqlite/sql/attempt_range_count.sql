-- How many attempts started in [?1, ?2), counted up to ?3 from the index of start times.
SELECT COUNT(*) FROM (
    SELECT 1 FROM attempts INDEXED BY attempts_started
    WHERE started_at >= ?1 AND started_at < ?2 LIMIT ?3
)
