-- Creates a schedule, unless one of that name exists (then no row).
--
-- $1 name, $2 cron, $3 time zone, $4 plan (JSON text), $5 overlap, $6 catch_up,
-- $7 first tick (NULL: none), $8 now
INSERT INTO schedules (name, cron, timezone, plan, overlap, catch_up, next_due, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (name) DO NOTHING
RETURNING id
