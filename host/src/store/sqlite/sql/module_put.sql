-- Stores a module under its digest. A module stored already keeps its bytes and the time
-- it was added, and takes a new name or tag only where one is given.
--
-- ?1 digest: sha256 of the component, hex
-- ?2 name, or NULL
-- ?3 tag, or NULL
-- ?4 size in bytes
-- ?5 the component's bytes
-- ?6 now (added_at)
-- ?7 languages, ?8 processed_by: JSON arrays of text, read from the bytes (and so filled
--    in for a module stored before they were read)
INSERT INTO modules (digest, name, tag, size, bytes, added_at, languages, processed_by)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
ON CONFLICT (digest) DO UPDATE SET name = coalesce(excluded.name, name),
    tag = coalesce(excluded.tag, tag), languages = excluded.languages,
    processed_by = excluded.processed_by;
