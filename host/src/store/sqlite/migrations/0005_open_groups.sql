-- qhost's SQLite schema, version 5: an index of the groups with room.
--
-- A claim whose scan was cut off looks behind it for the first tasks of every group that
-- has both ready tasks and room. It walks this index and the per-group ready index in
-- step, seeking in each to the other's next key, so a look costs about as many seeks as
-- the smaller of the two sets has groups, never a read of the tasks of a busy group.

CREATE INDEX groups_open ON groups (key) WHERE running < lim;
