-- A task's cost, the tokens it spends of its group's rate when claimed (store/rate.rs).
-- NULL is a cost of 1, every task's before and most tasks' after: such a row stores
-- nothing more. The claim learns the costs of its candidates along tasks_costly, which
-- holds the dearer tasks alone: empty when none is, and never written for the others.
-- (Kept in the ready table, or as a default in every row, the cost slowed each claim.)
ALTER TABLE tasks ADD COLUMN cost INT;
CREATE INDEX tasks_costly ON tasks (id) INCLUDE (cost) WHERE cost IS NOT NULL;
