-- A tenant's budget meters memory and HTTP beside CPU (store/budget.rs): one period
-- (budget_period, NULL: no budget) and window for all three; a meter's budget NULL is
-- not bounded. Memory is counted in MiB-milliseconds, HTTP in body bytes sent and
-- received. cpu_budget may now be NULL in a budget of memory or HTTP alone.
ALTER TABLE tenants ADD COLUMN memory_budget BIGINT;
ALTER TABLE tenants ADD COLUMN http_budget BIGINT;
ALTER TABLE tenants ADD COLUMN memory_used BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tenants ADD COLUMN http_used BIGINT NOT NULL DEFAULT 0;
-- The HTTP body bytes its attempts sent and received, since it was added.
ALTER TABLE tenants ADD COLUMN http_bytes BIGINT NOT NULL DEFAULT 0;
-- The HTTP body bytes an attempt sent and received (NULL: it did not run).
ALTER TABLE attempts ADD COLUMN http_bytes BIGINT;
