-- qhost's SQLite schema, version 31: a task's cost, the tokens it spends of its group's
-- rate when claimed (store/rate.rs). 1 for every task before, and by default: a constant
-- 1 takes no bytes in a row, only its header's type.
ALTER TABLE tasks ADD COLUMN cost INTEGER NOT NULL DEFAULT 1;
