-- The planner's estimate of the attempts started in [$1, $2), read from its plan (the
-- values are written in: a plan's estimate needs them, and they are numbers).
EXPLAIN (FORMAT JSON) SELECT 1 FROM attempts WHERE started_at >= $1 AND started_at < $2
