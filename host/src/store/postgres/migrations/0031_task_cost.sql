-- A task's cost, the tokens it spends of its group's rate when claimed (store/rate.rs):
-- 1 for every task before, and by default. The ready table carries it too, since the
-- claim reads its candidates from there alone.
ALTER TABLE tasks ADD COLUMN cost INT NOT NULL DEFAULT 1;
ALTER TABLE ready ADD COLUMN cost INT NOT NULL DEFAULT 1;
