-- Module names as aliases: a module has any number of names, a name names one module.
-- A name given again to another module moves to it, and only that name moves.
-- `modules.name` stays the name a module is shown with: the last given to it that it
-- still has. This table is what names resolve.
CREATE TABLE module_names (
    name     TEXT PRIMARY KEY,
    digest   TEXT NOT NULL,       -- modules.digest
    named_at INTEGER NOT NULL     -- when the name was given to it
);
CREATE INDEX module_names_digest ON module_names (digest, named_at);

-- A name several modules had stays with the newest of them, the one it named.
INSERT INTO module_names (name, digest, named_at)
SELECT m.name, m.digest, m.added_at FROM modules m
WHERE m.name IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM modules n
    WHERE n.name = m.name
      AND (n.added_at > m.added_at OR (n.added_at = m.added_at AND n.digest > m.digest)));
UPDATE modules SET name = NULL
WHERE name IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM module_names k WHERE k.name = modules.name AND k.digest = modules.digest);
