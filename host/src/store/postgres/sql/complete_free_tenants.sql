-- Frees the slots ended attempts held in their tenants, locked after the batches and
-- groups (one order of locking across completions); counts their slot time in each
-- tenant's fair share (store/fair.rs) and their use in its budget's window at $6 (now),
-- and holds a tenant to the window's end once the window's use of any meter reaches its
-- budget (store/budget.rs states the window's rule; keep them together). Returns whether
-- each tenant is held then.
--
-- $1 tenant ids (bigint[])
-- $2 slots freed in each (int[], matching $1)
-- $3 the slot time their attempts held, in microseconds (bigint[], matching $1)
-- $4 the CPU time their attempts used, in microseconds (bigint[], matching $1)
-- $5 the memory their attempts held, in MiB-seconds (float8[], matching $1)
-- $6 now (bigint)
-- $7 the attempts among them that ran (bigint[], matching $1)
-- $8 the memory again, in MiB-milliseconds as a budget counts it (bigint[], matching $1)
-- $9 the HTTP body bytes they sent and received (bigint[], matching $1)
UPDATE tenants AS n SET running = n.running - u.n, slot_micros = n.slot_micros + u.held,
    fair_used = n.fair_used + u.held, attempts_ended = n.attempts_ended + u.ran,
    cpu_micros = n.cpu_micros + u.cpu, memory_mib_seconds = n.memory_mib_seconds + u.memory,
    http_bytes = n.http_bytes + u.http,
    budget_used = CASE WHEN n.budget_period IS NULL THEN 0
                       WHEN n.budget_window = $6 - $6 % n.budget_period
                       THEN n.budget_used + u.cpu
                       ELSE u.cpu END,
    memory_used = CASE WHEN n.budget_period IS NULL THEN 0
                       WHEN n.budget_window = $6 - $6 % n.budget_period
                       THEN n.memory_used + u.memory_ms
                       ELSE u.memory_ms END,
    http_used = CASE WHEN n.budget_period IS NULL THEN 0
                     WHEN n.budget_window = $6 - $6 % n.budget_period
                     THEN n.http_used + u.http
                     ELSE u.http END,
    budget_window = coalesce($6 - $6 % n.budget_period, 0),
    held_until = CASE
        WHEN n.budget_period IS NULL THEN n.held_until
        WHEN CASE WHEN n.budget_window = $6 - $6 % n.budget_period THEN n.budget_used + u.cpu
                  ELSE u.cpu END >= n.cpu_budget
          OR CASE WHEN n.budget_window = $6 - $6 % n.budget_period
                  THEN n.memory_used + u.memory_ms ELSE u.memory_ms END >= n.memory_budget
          OR CASE WHEN n.budget_window = $6 - $6 % n.budget_period THEN n.http_used + u.http
                  ELSE u.http END >= n.http_budget
        THEN greatest(n.held_until, $6 - $6 % n.budget_period + n.budget_period)
        ELSE n.held_until END
FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::bigint[], $5::float8[],
            $7::bigint[], $8::bigint[], $9::bigint[])
    AS u(id, n, held, cpu, memory, ran, memory_ms, http)
WHERE n.id = u.id
RETURNING n.held_until > $6
