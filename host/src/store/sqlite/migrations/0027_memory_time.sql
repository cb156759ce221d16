-- The memory each attempt held over its run, in MiB-seconds (its size over time; NULL where
-- no run measured it), and the sum over a tenant's attempts, counted where its slots are
-- freed.
ALTER TABLE attempts ADD COLUMN memory_mib_seconds REAL;
ALTER TABLE tenants ADD COLUMN memory_mib_seconds REAL NOT NULL DEFAULT 0;
