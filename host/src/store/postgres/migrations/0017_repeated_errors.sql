-- An attempt whose error repeats its task's previous attempt's keeps no copy of it:
-- `error` is NULL and `error_from` names the attempt of the same task that holds the text
-- (the first of the run of repeats). Reads give the text back.
ALTER TABLE attempts ADD COLUMN error_from INT;
