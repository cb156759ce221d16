-- Sets or removes a group's rate, creating the group (with the default limit, 1) if
-- needed. A rate set anew starts with its full burst: its tat goes back to 0.
--
-- ?1 group key
-- ?2 tasks per period (NULL: no rate)
-- ?3 the period in microseconds
-- ?4 the burst
INSERT INTO groups (key, rate_limit, rate_period, rate_burst) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (key) DO UPDATE SET
    rate_limit = excluded.rate_limit,
    rate_period = excluded.rate_period,
    rate_burst = excluded.rate_burst,
    rate_tat = 0;
