-- Records a handled tick.
--
-- $1 schedule id, $2 due at, $3 fired at, $4 result (fired | skipped | failed),
-- $5 batch id or NULL, $6 detail or NULL
INSERT INTO schedule_ticks (schedule_id, due_at, fired_at, result, batch_id, detail)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (schedule_id, due_at) DO UPDATE
    SET fired_at = excluded.fired_at, result = excluded.result,
        batch_id = excluded.batch_id, detail = excluded.detail
