-- Quotas on what a batch stores, and what it stores now: tasks, and bytes of input, of
-- output and of captured text (errors, log messages, stdout, stderr). A quota of NULL is
-- none. Usage is kept by submissions, completions and pruning; a row per batch, made when
-- the batch opens. A table of its own, so that its row lock is taken first by whatever
-- writes usage (before the batch's gate lock), never held against the batch's own row.
CREATE TABLE batch_quotas (
    batch_id     BIGINT PRIMARY KEY,       -- batches.id
    quota_tasks  BIGINT,
    quota_input  BIGINT,
    quota_output BIGINT,
    quota_text   BIGINT,
    used_tasks   BIGINT NOT NULL DEFAULT 0,
    used_input   BIGINT NOT NULL DEFAULT 0,
    used_output  BIGINT NOT NULL DEFAULT 0,
    used_text    BIGINT NOT NULL DEFAULT 0
);

-- Batches opened before quotas have none, and what they store counted once.
INSERT INTO batch_quotas (batch_id, used_tasks, used_input, used_output)
SELECT b.id, count(t.id), coalesce(sum(octet_length(t.input)), 0),
       coalesce(sum(octet_length(t.output)), 0)
FROM batches b LEFT JOIN tasks t ON t.batch_id = b.id
GROUP BY b.id;
UPDATE batch_quotas q SET used_text = s.text
FROM (SELECT a.batch_id,
             sum(coalesce(octet_length(a.error), 0) + coalesce(octet_length(a.stdout), 0)
                 + coalesce(octet_length(a.stderr), 0)
                 + coalesce((SELECT sum(octet_length(l->>'message'))
                             FROM jsonb_array_elements(a.logs::jsonb) l), 0)) AS text
      FROM attempts a GROUP BY a.batch_id) s
WHERE q.batch_id = s.batch_id;
