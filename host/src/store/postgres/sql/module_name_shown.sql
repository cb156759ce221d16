-- Sets the name a module is shown with to the last given to it that it still has (NULL
-- when it has none), after one of its names moved or was removed.
--
-- $1 digest, hex
UPDATE modules SET name = (SELECT k.name FROM module_names k WHERE k.digest = $1
                           ORDER BY k.named_at DESC, k.name DESC LIMIT 1)
WHERE digest = $1
