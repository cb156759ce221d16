-- Quotas on what a batch stores, and what it stores now: tasks, and bytes of input, of
-- output and of captured text (errors, log messages, stdout, stderr). A quota of NULL is
-- none. Usage is kept by submissions, completions and pruning; a row per batch, made when
-- the batch opens.
CREATE TABLE batch_quotas (
    batch_id     INTEGER PRIMARY KEY,      -- batches.id
    quota_tasks  INTEGER,
    quota_input  INTEGER,
    quota_output INTEGER,
    quota_text   INTEGER,
    used_tasks   INTEGER NOT NULL DEFAULT 0,
    used_input   INTEGER NOT NULL DEFAULT 0,
    used_output  INTEGER NOT NULL DEFAULT 0,
    used_text    INTEGER NOT NULL DEFAULT 0
);

-- Batches opened before quotas have none, and what they store counted once.
INSERT INTO batch_quotas (batch_id) SELECT id FROM batches;
UPDATE batch_quotas SET
    (used_tasks, used_input, used_output) = (
        SELECT count(*), coalesce(sum(octet_length(input)), 0),
               coalesce(sum(octet_length(output)), 0)
        FROM tasks WHERE batch_id = batch_quotas.batch_id),
    used_text = (
        SELECT coalesce(sum(coalesce(octet_length(error), 0) + coalesce(octet_length(stdout), 0)
                            + coalesce(octet_length(stderr), 0)
                            + coalesce((SELECT sum(octet_length(json_extract(l.value, '$.message')))
                                        FROM json_each(a.logs) l), 0)), 0)
        FROM attempts a WHERE a.batch_id = batch_quotas.batch_id);
