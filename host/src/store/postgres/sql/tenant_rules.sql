-- What the batches of tenant $1 may do: its row alone, without the counts tenant_list.sql
-- adds (a submission reads this on every request).
SELECT name, max_priority, shared_groups, modules, allow_http, max_limits
FROM tenants
WHERE id = $1
