-- A tenant's CPU budget (store/budget.rs): at most cpu_budget microseconds of CPU per
-- budget_period microseconds (both NULL: no budget); the window its last completion
-- counted in and the CPU its attempts used there; and the time it is held to, once that
-- use reached the budget: the claim gives it no room before then.
ALTER TABLE tenants ADD COLUMN cpu_budget BIGINT;
ALTER TABLE tenants ADD COLUMN budget_period BIGINT;
ALTER TABLE tenants ADD COLUMN budget_window BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tenants ADD COLUMN budget_used BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tenants ADD COLUMN held_until BIGINT NOT NULL DEFAULT 0;
-- The holds still to end, which the claim loop wakes at; partial, so that it costs the
-- tenants never held nothing.
CREATE INDEX tenants_hold_ends ON tenants (held_until) WHERE held_until > 0;
