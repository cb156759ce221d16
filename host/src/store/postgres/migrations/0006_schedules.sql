-- Schedules: batches opened from a plan at a cron expression's ticks, and the ticks each
-- handled (the last 100 per schedule). Times are the database's clock, in microseconds.
CREATE TABLE schedules (
    id          BIGSERIAL PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    cron        TEXT NOT NULL,
    timezone    TEXT NOT NULL,
    plan        TEXT NOT NULL,           -- JSON: {"batch": {...}, "tasks": [...]}
    overlap     TEXT NOT NULL,           -- skip | queue | allow
    catch_up    TEXT NOT NULL,           -- none | last | all:N
    paused      BOOLEAN NOT NULL DEFAULT FALSE,
    next_due    BIGINT,                  -- the first tick not yet handled; NULL: no more
    last_batch  BIGINT,                  -- the batch of the last tick that fired
    missed      BIGINT NOT NULL DEFAULT 0,
    created_at  BIGINT NOT NULL
);
CREATE INDEX schedules_due ON schedules (next_due) WHERE NOT paused AND next_due IS NOT NULL;

CREATE TABLE schedule_ticks (
    schedule_id BIGINT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    due_at      BIGINT NOT NULL,
    fired_at    BIGINT NOT NULL,
    result      TEXT NOT NULL,           -- fired | skipped | failed
    batch_id    BIGINT,
    detail      TEXT,
    PRIMARY KEY (schedule_id, due_at)
);
