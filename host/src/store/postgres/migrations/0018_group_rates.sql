-- qhost's PostgreSQL schema, version 18: a rate per group, beside its concurrency limit.
--
-- A group with a rate lets `rate_limit` tasks be claimed per `rate_period` microseconds,
-- `rate_burst` of them at once after a quiet spell (store/rate.rs). The claim keeps the
-- rate's state in `rate_tat`, the "theoretical arrival time" of the generic cell rate
-- algorithm, in the transaction that claims: so the rate holds across restarts.
-- A group without a rate has NULLs, and the claim treats it as before.
ALTER TABLE groups ADD COLUMN rate_limit INT;
ALTER TABLE groups ADD COLUMN rate_period BIGINT;
ALTER TABLE groups ADD COLUMN rate_burst INT;
ALTER TABLE groups ADD COLUMN rate_tat BIGINT NOT NULL DEFAULT 0;

-- The groups with a rate: when the claim took less than it could, when the next of them
-- with ready tasks gets a token back (claim_next_rate.sql).
CREATE INDEX groups_rated ON groups (key) WHERE rate_limit IS NOT NULL;
