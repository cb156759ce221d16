-- The slot time a tenant's attempts have held (microseconds, from each attempt's start
-- to its end, as the log records it), counted where its slots are freed.
ALTER TABLE tenants ADD COLUMN slot_micros INTEGER NOT NULL DEFAULT 0;

-- A tenant's open tasks at most (submitted, not ended; NULL: no limit). Each count of a
-- batch's open tasks at one order carries the batch's tenant, so that a tenant's open
-- tasks are the sum over its open orders alone, found along batch_orders_tenant.
ALTER TABLE tenants ADD COLUMN max_open INTEGER;
ALTER TABLE batch_orders ADD COLUMN tenant_id INTEGER;
UPDATE batch_orders SET tenant_id = (
    SELECT b.tenant_id FROM batches b WHERE b.id = batch_orders.batch_id)
WHERE batch_id IN (SELECT id FROM batches WHERE tenant_id IS NOT NULL);
-- Partial: the orders of the admin's batches, most of them, cost it nothing.
CREATE INDEX batch_orders_tenant ON batch_orders (tenant_id) WHERE tenant_id IS NOT NULL;
