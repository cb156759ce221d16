-- Records one ended attempt in the execution log.
--
-- ?1 task id
-- ?2 batch id
-- ?3 attempt number (1 for the first)
-- ?4 node that ran it
-- ?5 slot it ran on, or NULL
-- ?6 its lease token
-- ?7 group key, or NULL
-- ?8 order
-- ?9 when it started
-- ?10 when it ended
-- ?11 outcome (succeeded, guest-error, trap, timeout, lost, ...)
-- ?12 error, or NULL
-- ?13 log lines (JSON [LogLine]), or NULL when none
-- ?14 stdout, or NULL when empty
-- ?15 stderr, or NULL when empty
-- ?16 the CPU time it used (microseconds), or NULL when no run measured it
-- ?17 the memory it held (MiB-seconds), or NULL when no run measured it
-- ?18 the HTTP body bytes it sent and received, or NULL when no run measured them
INSERT INTO attempts (task_id, batch_id, attempt, node, slot, lease_token, group_key, ord,
    started_at, ended_at, outcome, error, logs, stdout, stderr, cpu_micros, memory_mib_seconds,
    http_bytes)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18);
