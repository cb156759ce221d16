-- Counts what ended attempts store against their batch's quotas, if it all fits; no row
-- changes when it does not (the caller then fits each attempt in what is left).
--
-- ?1 bytes of output; ?2 bytes of captured text; ?3 batch id
UPDATE batch_quotas SET used_output = used_output + ?1, used_text = used_text + ?2
WHERE batch_id = ?3
  AND (quota_output IS NULL OR used_output + ?1 <= quota_output)
  AND (quota_text IS NULL OR used_text + ?2 <= quota_text);
