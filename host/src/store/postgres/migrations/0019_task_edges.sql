-- Dependency edges between the tasks of a batch (see store/graph.rs).
--
-- A task may have a key, unique in its batch, by which others name it in `after`. A task
-- with dependencies that have not ended is stored waiting (0) with their count in
-- `deps_open`; a gate promotes only tasks at zero. `dependents` is set once an edge leads
-- from the task, so that a completion looks for edges only then. No index mentions
-- either, so changing them keeps the row's update heap-only.
ALTER TABLE tasks ADD COLUMN task_key TEXT;
ALTER TABLE tasks ADD COLUMN deps_open INT NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN dependents BOOLEAN NOT NULL DEFAULT FALSE;
CREATE UNIQUE INDEX tasks_key ON tasks (batch_id, task_key) WHERE task_key IS NOT NULL;

-- `task_id` runs after `dep_id`; `on_failure` is what the dependency's failure does to it
-- (0 cancel, 1 run, 2 skip). Completions read the edges by dependency, an attempt's start
-- by dependent.
CREATE TABLE task_edges (
    dep_id     BIGINT NOT NULL,
    task_id    BIGINT NOT NULL,
    on_failure INT NOT NULL,
    PRIMARY KEY (dep_id, task_id)
);
CREATE INDEX task_edges_task ON task_edges (task_id, dep_id);

-- The fan-ins of each batch (`after: "*"`): every task submitted later goes before them.
CREATE TABLE batch_fan_ins (
    batch_id   BIGINT NOT NULL,
    task_id    BIGINT NOT NULL,
    on_failure INT NOT NULL,
    PRIMARY KEY (batch_id, task_id)
);
