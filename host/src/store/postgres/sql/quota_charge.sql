-- Counts what ended attempts store against their batches' quotas, for each batch where it
-- all fits; returns those batches (the caller fits the attempts of the others in what is
-- left). Rows are locked in id order ($1 sorted), before any gate lock.
--
-- $1 batch ids (bigint[], sorted)
-- $2 bytes of output of each (bigint[], matching $1)
-- $3 bytes of captured text of each (bigint[], matching $1)
UPDATE batch_quotas AS q SET used_output = q.used_output + u.output,
    used_text = q.used_text + u.text
FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS u(id, output, text)
WHERE q.batch_id = u.id
  AND (q.quota_output IS NULL OR q.used_output + u.output <= q.quota_output)
  AND (q.quota_text IS NULL OR q.used_text + u.text <= q.quota_text)
RETURNING q.batch_id
