-- Weighted fair share between tenants (store/fair.rs). A tenant's weight; the slot time
-- its attempts held (raised to the fair clock when it starts again after holding nothing);
-- and how many of its attempts ended, whose mean slot time each claimed task counts for.
ALTER TABLE tenants ADD COLUMN weight INT NOT NULL DEFAULT 1;
ALTER TABLE tenants ADD COLUMN fair_used BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tenants ADD COLUMN attempts_ended BIGINT NOT NULL DEFAULT 0;
-- The highest standing a claim has served: where a tenant that held nothing starts.
ALTER TABLE scheduler ADD COLUMN fair_clock BIGINT NOT NULL DEFAULT 0;
-- Each task's tenant, its batch's (NULL: the admin's), carried into the ready queue so
-- that a claim finds the tenants with ready work along ready_lanes, one seek each:
-- partial, so that the admin's tasks cost it nothing.
ALTER TABLE tasks ADD COLUMN tenant_id BIGINT;
UPDATE tasks t SET tenant_id = b.tenant_id
FROM batches b WHERE b.id = t.batch_id AND b.tenant_id IS NOT NULL;
ALTER TABLE ready ADD COLUMN tenant_id BIGINT;
UPDATE ready r SET tenant_id = b.tenant_id
FROM batches b WHERE b.id = r.batch_id AND b.tenant_id IS NOT NULL;
CREATE INDEX ready_lanes ON ready (tenant_id, not_before) WHERE tenant_id IS NOT NULL;
