//! Schedules: creating, listing, pausing and deleting them, and handling a tick in one
//! transaction that moves the schedule on only if no other handling came first.

use rusqlite::{Connection, OptionalExtension, Row, Transaction, params};

use super::{batches, internal, not_found, tasks};
use crate::store::*;

fn read(r: &Row<'_>) -> rusqlite::Result<ScheduleInfo> {
    let plan: String = r.get(4)?;
    Ok(ScheduleInfo {
        id: r.get(0)?,
        name: r.get(1)?,
        cron: r.get(2)?,
        timezone: r.get(3)?,
        plan: serde_json::from_str(&plan).unwrap_or_default(),
        overlap: r.get(5)?,
        catch_up: r.get(6)?,
        paused: r.get(7)?,
        next_due: r.get(8)?,
        last_batch: r.get(9)?,
        missed: r.get::<_, i64>(10)? as u64,
        created_at: r.get(11)?,
    })
}

pub(super) fn create(
    tx: &Transaction<'_>,
    spec: ScheduleSpec,
    next_due: Option<Micros>,
    now: Micros,
) -> StoreResult<ScheduleInfo> {
    if find(tx, &spec.name)?.is_some() {
        return Err(errors::schedule_exists(&spec.name));
    }
    tx.prepare_cached(include_str!("sql/schedule_insert.sql"))
        .map_err(internal)?
        .execute(params![
            spec.name,
            spec.cron,
            spec.timezone,
            spec.plan.to_string(),
            spec.overlap,
            spec.catch_up,
            next_due,
            now
        ])
        .map_err(internal)?;
    get(tx, &spec.name)
}

pub(super) fn list(conn: &Connection) -> StoreResult<Vec<ScheduleInfo>> {
    let mut stmt = conn
        .prepare_cached(include_str!("sql/schedule_list.sql"))
        .map_err(internal)?;
    let rows = stmt.query_map([], read).map_err(internal)?;
    rows.collect::<Result<_, _>>().map_err(internal)
}

fn find(conn: &Connection, name: &str) -> StoreResult<Option<ScheduleInfo>> {
    conn.prepare_cached(include_str!("sql/schedule_get.sql"))
        .map_err(internal)?
        .query_row([name], read)
        .optional()
        .map_err(internal)
}

pub(super) fn get(conn: &Connection, name: &str) -> StoreResult<ScheduleInfo> {
    find(conn, name)?.ok_or_else(|| not_found("schedule", name))
}

pub(super) fn ticks(conn: &Connection, schedule: i64, limit: usize) -> StoreResult<Vec<Tick>> {
    let mut stmt = conn
        .prepare_cached(include_str!("sql/schedule_ticks.sql"))
        .map_err(internal)?;
    let rows = stmt
        .query_map(params![schedule, limit as i64], |r| {
            Ok(Tick {
                due_at: r.get(0)?,
                fired_at: r.get(1)?,
                result: TickResult::parse(&r.get::<_, String>(2)?).unwrap_or(TickResult::Failed),
                batch: r.get(3)?,
                detail: r.get(4)?,
            })
        })
        .map_err(internal)?;
    rows.collect::<Result<_, _>>().map_err(internal)
}

pub(super) fn set_paused(
    tx: &Transaction<'_>,
    name: &str,
    paused: bool,
    next_due: Option<Micros>,
) -> StoreResult<ScheduleInfo> {
    let changed = tx
        .prepare_cached(include_str!("sql/schedule_pause.sql"))
        .map_err(internal)?
        .execute(params![name, paused, next_due])
        .map_err(internal)?;
    if changed == 0 {
        return Err(not_found("schedule", name));
    }
    get(tx, name)
}

pub(super) fn delete(tx: &Transaction<'_>, name: &str) -> StoreResult<()> {
    let id = get(tx, name)?.id;
    for sql in [
        include_str!("sql/schedule_ticks_delete.sql"),
        include_str!("sql/schedule_delete.sql"),
    ] {
        tx.prepare_cached(sql)
            .map_err(internal)?
            .execute([id])
            .map_err(internal)?;
    }
    Ok(())
}

pub(super) fn due(
    conn: &Connection,
    now: Micros,
) -> StoreResult<(Vec<ScheduleInfo>, Option<Micros>)> {
    let due = conn
        .prepare_cached(include_str!("sql/schedule_due.sql"))
        .map_err(internal)?
        .query_map([now], read)
        .map_err(internal)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(internal)?;
    let next: Option<Micros> = conn
        .prepare_cached(include_str!("sql/schedule_next_due.sql"))
        .map_err(internal)?
        .query_row([now], |r| r.get(0))
        .map_err(internal)?;
    Ok((due, next))
}

pub(super) fn fire(tx: &Transaction<'_>, fire: Fire) -> StoreResult<Option<Tick>> {
    match fire.cursor {
        Some(cursor) => {
            let moved = tx
                .prepare_cached(include_str!("sql/schedule_advance.sql"))
                .map_err(internal)?
                .execute(params![
                    fire.schedule,
                    cursor,
                    fire.next_due,
                    fire.missed as i64
                ])
                .map_err(internal)?;
            if moved == 0 {
                return Ok(None);
            }
        }
        None => {
            let exists: bool = tx
                .prepare_cached(include_str!("sql/schedule_exists.sql"))
                .map_err(internal)?
                .query_row([fire.schedule], |r| r.get(0))
                .map_err(internal)?;
            if !exists {
                return Err(not_found("schedule", fire.schedule));
            }
        }
    }
    let batch = match fire.batch {
        Some(open) => {
            let batch = batches::open(tx, open.spec, open.handle_hash, fire.now)?.id;
            let (specs, trace) = open.tasks.into_parts();
            tasks::submit(tx, batch, specs, trace.as_deref(), fire.now)?;
            tx.prepare_cached(include_str!("sql/schedule_last_batch.sql"))
                .map_err(internal)?
                .execute(params![fire.schedule, batch])
                .map_err(internal)?;
            Some(batch)
        }
        None => None,
    };
    let tick = Tick {
        due_at: fire.tick,
        fired_at: fire.now,
        result: fire.result,
        batch,
        detail: fire.detail,
    };
    tx.prepare_cached(include_str!("sql/schedule_tick_insert.sql"))
        .map_err(internal)?
        .execute(params![
            fire.schedule,
            tick.due_at,
            tick.fired_at,
            tick.result.as_str(),
            tick.batch,
            tick.detail
        ])
        .map_err(internal)?;
    tx.prepare_cached(include_str!("sql/schedule_ticks_prune.sql"))
        .map_err(internal)?
        .execute([fire.schedule])
        .map_err(internal)?;
    Ok(Some(tick))
}
