-- Claims outbox events due for one try each: counts the try and holds them until the try
-- is over. Rows another node is claiming are skipped, so one try goes out once.
--
-- $1 now: events due by it
-- $2 held until
-- $3 most events
-- $4 whether this node has the server's webhook: its events (url NULL) only then
WITH due AS (
    SELECT id FROM webhook_events
    WHERE due_at <= $1 AND (url IS NOT NULL OR $4::boolean)
    ORDER BY due_at, id LIMIT $3
    FOR UPDATE SKIP LOCKED
)
UPDATE webhook_events e SET due_at = $2, tries = e.tries + 1
FROM due WHERE e.id = due.id
RETURNING e.id, e.batch_id, e.task_id, e.kind, e.url, e.secret, e.outcome, e.error,
          e.created_at, e.tries, e.body
