-- Tenants (see store/tenant.rs): who may open batches besides the admin, what their
-- batches may do (a priority ceiling, groups shared with them, the modules they may run,
-- the origins they may reach), their tokens
-- (the sha256 of each token's secret, never the token), and the tenant a batch belongs
-- to (NULL: the admin's). Ids are never used again, so a revoked token's id names no
-- later one.
CREATE TABLE tenants (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    max_priority INTEGER,                     -- NULL: the server's ceiling
    shared_groups TEXT NOT NULL DEFAULT '[]', -- JSON array: groups outside its namespace it may use
    modules TEXT,                             -- JSON array of the module names and digests it may run; NULL: every one
    allow_http TEXT                           -- JSON array of the origins its batches may be granted; NULL: the operator's
);
CREATE TABLE tenant_tokens (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id INTEGER NOT NULL REFERENCES tenants (id),
    secret_hash BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE INDEX tenant_tokens_tenant ON tenant_tokens (tenant_id);
ALTER TABLE batches ADD COLUMN tenant_id INTEGER REFERENCES tenants (id);
-- A tenant's batches, newest first; partial, so that no other list's plan can take it.
CREATE INDEX batches_tenant ON batches (tenant_id, created_at, id) WHERE tenant_id IS NOT NULL;
