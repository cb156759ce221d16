-- A tenant's running slots at most (NULL: no limit), and its tasks claimed now, which
-- the claim counts as it counts a group's: across all its batches; and the most its
-- tasks may ask of each limit (JSON, store/tenant_maxima.rs; NULL: the operator's).
ALTER TABLE tenants ADD COLUMN max_running INT;
ALTER TABLE tenants ADD COLUMN running INT NOT NULL DEFAULT 0;
ALTER TABLE tenants ADD COLUMN max_limits TEXT;
-- Tasks claimed when this runs count already (state 2: claimed).
UPDATE tenants SET running = (
    SELECT COUNT(*) FROM tasks t JOIN batches b ON b.id = t.batch_id
    WHERE b.tenant_id = tenants.id AND t.state = 2);
