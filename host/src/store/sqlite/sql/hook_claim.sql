-- Claims outbox events due for one try each: counts the try and holds them until the try
-- is over, so that none is sent twice at once.
--
-- ?1 now: events due by it
-- ?2 held until
-- ?3 most events
-- ?4 whether the server has a webhook: its events (url NULL) are claimed only then
UPDATE webhook_events SET due_at = ?2, tries = tries + 1
WHERE id IN (
    SELECT id FROM webhook_events
    WHERE due_at <= ?1 AND (url IS NOT NULL OR ?4)
    ORDER BY due_at, id LIMIT ?3)
RETURNING id, batch_id, task_id, kind, url, secret, outcome, error, created_at, tries, body
