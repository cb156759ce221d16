-- What a module's `producers` sections name, read at upload: JSON arrays of text. NULL
-- for a module stored before they were read (shown as unknown until it is added again).
ALTER TABLE modules ADD COLUMN languages TEXT;
ALTER TABLE modules ADD COLUMN processed_by TEXT;
