-- Every tenant, by name, with its tokens not revoked.
SELECT t.id, t.name, t.created_at,
       (SELECT count(*) FROM tenant_tokens k WHERE k.tenant_id = t.id AND k.revoked_at IS NULL)
FROM tenants t
ORDER BY t.name
