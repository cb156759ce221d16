-- Schedules: batches opened from a plan at a cron expression's ticks, and the ticks each
-- handled (the last 100 per schedule).
CREATE TABLE schedules (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    cron        TEXT NOT NULL,
    timezone    TEXT NOT NULL,
    plan        TEXT NOT NULL,           -- JSON: {"batch": {...}, "tasks": [...]}
    overlap     TEXT NOT NULL,           -- skip | queue | allow
    catch_up    TEXT NOT NULL,           -- none | last | all:N
    paused      INTEGER NOT NULL DEFAULT 0,
    next_due    INTEGER,                 -- the first tick not yet handled; NULL: no more
    last_batch  INTEGER,                 -- the batch of the last tick that fired
    missed      INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL
);
CREATE INDEX schedules_due ON schedules (next_due) WHERE paused = 0 AND next_due IS NOT NULL;

CREATE TABLE schedule_ticks (
    schedule_id INTEGER NOT NULL,
    due_at      INTEGER NOT NULL,
    fired_at    INTEGER NOT NULL,
    result      TEXT NOT NULL,           -- fired | skipped | failed
    batch_id    INTEGER,
    detail      TEXT,
    PRIMARY KEY (schedule_id, due_at)
) WITHOUT ROWID;
