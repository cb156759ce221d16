-- Gives a name to a module: it is added to the module's names, or moved to it from the
-- module it named until now, which keeps its other names (see module_name_shown.sql).
--
-- ?1 name; ?2 digest, hex; ?3 now (named_at)
INSERT INTO module_names (name, digest, named_at) VALUES (?1, ?2, ?3)
ON CONFLICT (name) DO UPDATE SET digest = excluded.digest, named_at = excluded.named_at
