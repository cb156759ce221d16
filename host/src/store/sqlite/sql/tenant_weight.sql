-- Gives tenant ?2 the weight ?1, keeping its pass (fair_used / weight, store/fair.rs):
-- a new weight changes its share from now on, not what it was served.
UPDATE tenants SET fair_used = fair_used * ?1 / weight, weight = ?1 WHERE id = ?2
