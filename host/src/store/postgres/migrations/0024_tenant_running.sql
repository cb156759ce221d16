-- A tenant's running slots at most (NULL: no limit), and its tasks claimed now, which
-- the claim counts as it counts a group's: across all its batches.
ALTER TABLE tenants ADD COLUMN max_running INT;
ALTER TABLE tenants ADD COLUMN running INT NOT NULL DEFAULT 0;
