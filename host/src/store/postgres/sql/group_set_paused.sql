-- Pauses or resumes a group, creating it (with the default limit, 1) if needed. A paused
-- group has lim 0, which claims read as no room; the limit it gets back on resume is kept
-- in resume_lim. Pausing a paused group, or resuming one that runs, changes nothing.
--
-- $1 group key
-- $2 true to pause, false to resume
INSERT INTO groups (key, lim, resume_lim, paused)
VALUES ($1, CASE WHEN $2 THEN 0 ELSE 1 END, 1, $2)
ON CONFLICT (key) DO UPDATE SET
    resume_lim = CASE WHEN excluded.paused AND NOT groups.paused THEN groups.lim
                      ELSE groups.resume_lim END,
    lim = CASE WHEN excluded.paused THEN 0
               WHEN groups.paused THEN groups.resume_lim
               ELSE groups.lim END,
    paused = excluded.paused
