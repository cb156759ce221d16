-- The CPU time each attempt used (microseconds: its instantiation, its wasm and the host
-- calls it made, not the time it waited; NULL where no run measured it: an attempt lost
-- with its node, a task that could not start), and the sum over a tenant's attempts,
-- counted where its slots are freed.
ALTER TABLE attempts ADD COLUMN cpu_micros BIGINT;
ALTER TABLE tenants ADD COLUMN cpu_micros BIGINT NOT NULL DEFAULT 0;
