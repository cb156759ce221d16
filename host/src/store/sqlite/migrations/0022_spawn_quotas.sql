-- Quotas on how a batch's tasks grow it (see store/quota.rs): children one task may submit,
-- and how deep children may go. NULL is none. Batches opened before keep the bounds they
-- had: 1,000 children per task, 8 deep.
ALTER TABLE batch_quotas ADD COLUMN quota_children INTEGER;
ALTER TABLE batch_quotas ADD COLUMN quota_depth INTEGER;
UPDATE batch_quotas SET quota_children = 1000, quota_depth = 8;
