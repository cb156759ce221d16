-- A tenant's tokens, oldest first.
-- $1 the tenant's name
SELECT k.id, t.name, k.created_at, k.revoked_at
FROM tenant_tokens k JOIN tenants t ON t.id = k.tenant_id
WHERE t.name = $1
ORDER BY k.id
