-- Sets a group's limit, creating the group if needed; a paused group keeps it for its
-- resume, and stays at 0.
--
-- $1 group key
-- $2 the limit
INSERT INTO groups (key, lim, resume_lim) VALUES ($1, $2, $2)
ON CONFLICT (key) DO UPDATE SET
    lim = CASE WHEN groups.paused THEN 0 ELSE excluded.lim END,
    resume_lim = excluded.lim
