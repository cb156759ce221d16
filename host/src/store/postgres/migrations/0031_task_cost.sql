-- A task's cost, the tokens it spends of its group's rate when claimed (store/rate.rs).
-- NULL is a cost of 1, every task's before and most tasks' after: such a row stores
-- nothing more (its null bitmap has room), where a default would be written into every
-- row of these two hot tables and slow each claim measurably. The ready table carries it
-- too, since the claim reads its candidates from there alone.
ALTER TABLE tasks ADD COLUMN cost INT;
ALTER TABLE ready ADD COLUMN cost INT;
