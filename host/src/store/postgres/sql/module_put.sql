-- Stores a module, or names and tags the one stored with these bytes already: a name or
-- tag given replaces the stored one, one not given keeps it.
--
-- $1 digest: sha256 of the bytes, hex
-- $2 name (or NULL)
-- $3 tag (or NULL)
-- $4 size of the bytes
-- $5 the bytes
-- $6 now (added_at, kept when the module was stored before)
-- $7 languages, $8 processed_by, read from the bytes (and so filled in for a module
--    stored before they were read)
--
-- Returns the module's name, tag and added_at as stored.
INSERT INTO modules (digest, name, tag, size, bytes, added_at, languages, processed_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (digest) DO UPDATE
    SET name = coalesce(excluded.name, modules.name),
        tag = coalesce(excluded.tag, modules.tag),
        languages = excluded.languages,
        processed_by = excluded.processed_by
RETURNING name, tag, added_at
