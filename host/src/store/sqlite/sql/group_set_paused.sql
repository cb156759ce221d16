-- Pauses or resumes a group, creating it (with the default limit, 1) if needed. A paused
-- group has lim 0, which the claim reads as no room; the limit it gets back on resume is
-- kept in resume_lim. Pausing a paused group, or resuming one that runs, changes nothing.
--
-- ?1 group key
-- ?2 1 to pause, 0 to resume
INSERT INTO groups (key, lim, resume_lim, paused)
VALUES (?1, CASE WHEN ?2 THEN 0 ELSE 1 END, 1, ?2)
ON CONFLICT (key) DO UPDATE SET
    resume_lim = CASE WHEN excluded.paused AND NOT paused THEN lim ELSE resume_lim END,
    lim = CASE WHEN excluded.paused THEN 0
               WHEN paused THEN resume_lim
               ELSE lim END,
    paused = excluded.paused;
