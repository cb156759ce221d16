-- A tenant's running slots at most (NULL: no limit), and its tasks claimed now, which
-- the claim counts as it counts a group's: across all its batches.
ALTER TABLE tenants ADD COLUMN max_running INTEGER;
ALTER TABLE tenants ADD COLUMN running INTEGER NOT NULL DEFAULT 0;
-- Tasks claimed when this runs count already (state 2: claimed).
UPDATE tenants SET running = (
    SELECT COUNT(*) FROM tasks t JOIN batches b ON b.id = t.batch_id
    WHERE b.tenant_id = tenants.id AND t.state = 2);
