-- Weighted fair share between tenants (store/fair.rs). A tenant's weight; the slot time
-- its attempts held (raised to the fair clock when it starts again after holding nothing);
-- and how many of its attempts ended, whose mean slot time each claimed task counts for.
ALTER TABLE tenants ADD COLUMN weight INTEGER NOT NULL DEFAULT 1;
ALTER TABLE tenants ADD COLUMN fair_used INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tenants ADD COLUMN attempts_ended INTEGER NOT NULL DEFAULT 0;
-- The highest standing a claim has served: where a tenant that held nothing starts.
ALTER TABLE scheduler ADD COLUMN fair_clock INTEGER NOT NULL DEFAULT 0;
-- Each task's tenant, its batch's (NULL: the admin's), so that a claim finds the tenants
-- with ready work along tasks_lanes, one seek each (covering: the state is in it only for
-- that); partial, so that the admin's tasks cost it nothing.
ALTER TABLE tasks ADD COLUMN tenant_id INTEGER;
UPDATE tasks SET tenant_id = (SELECT b.tenant_id FROM batches b WHERE b.id = tasks.batch_id)
WHERE batch_id IN (SELECT id FROM batches WHERE tenant_id IS NOT NULL);
CREATE INDEX tasks_lanes ON tasks (tenant_id, not_before, state)
    WHERE state = 1 AND tenant_id IS NOT NULL;
