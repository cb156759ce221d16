-- Keeps a schedule's last 100 ticks.
--
-- $1 schedule id
DELETE FROM schedule_ticks
WHERE schedule_id = $1 AND due_at < (
    SELECT due_at FROM schedule_ticks WHERE schedule_id = $1
    ORDER BY due_at DESC LIMIT 1 OFFSET 99)
