//! The whole queue at a glance in SQLite: tasks per state from the ended totals the
//! triggers of `migrations/0009_counters.sql` keep and from the indexes of tasks not
//! ended; the oldest ready task, the busy groups and the deepest batches.

use rusqlite::Connection;

use super::internal;
use crate::store::*;

pub(super) fn task_counts(conn: &Connection) -> StoreResult<Progress> {
    Ok(counts(conn, now_micros())?.0)
}

/// Tasks per state at `now` (as [`TaskState::shown`] says), and the ended totals.
fn counts(conn: &Connection, now: Micros) -> StoreResult<(Progress, EndedTotals)> {
    let mut progress = Progress::default();
    let mut totals = EndedTotals::default();
    let mut stmt = conn
        .prepare_cached(include_str!("sql/stats_totals.sql"))
        .map_err(internal)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, u64>(1)?,
                r.get::<_, u64>(2)?,
            ))
        })
        .map_err(internal)?;
    for row in rows {
        let (state, ended, gone) = row.map_err(internal)?;
        let now = ended.saturating_sub(gone);
        match state {
            3 => (progress.succeeded, totals.succeeded) = (now, ended),
            4 => (progress.failed, totals.failed) = (now, ended),
            5 => (progress.cancelled, totals.cancelled) = (now, ended),
            _ => {}
        }
    }
    let (open, ready, held, reserved, running, delayed): (u64, u64, u64, u64, u64, u64) = conn
        .prepare_cached(include_str!("sql/stats_open.sql"))
        .map_err(internal)?
        .query_row([now], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .map_err(internal)?;
    progress.ready = ready.saturating_sub(held + delayed);
    progress.held = held;
    progress.reserved = reserved;
    progress.running = running;
    progress.waiting = open.saturating_sub(ready + reserved + running) + delayed;
    Ok((progress, totals))
}

pub(super) fn queue_stats(conn: &Connection, now: Micros) -> StoreResult<QueueStats> {
    let (counts, ended_total) = counts(conn, now)?;
    let oldest_ready = conn
        .prepare_cached(include_str!("sql/stats_oldest_ready.sql"))
        .map_err(internal)?
        .query_map([now], |r| r.get(0))
        .map_err(internal)?
        .next()
        .transpose()
        .map_err(internal)?;
    let mut stmt = conn
        .prepare_cached(include_str!("sql/stats_groups.sql"))
        .map_err(internal)?;
    let groups = stmt
        .query_map([MAX_LISTED as i64, now], |r| {
            let (rate, tokens) =
                GroupDepth::rate_at((r.get(3)?, r.get(4)?, r.get(5)?), r.get(6)?, now);
            Ok(GroupDepth {
                key: r.get(0)?,
                limit: r.get(1)?,
                paused: r.get(2)?,
                running: r.get(7)?,
                ready: r.get(8)?,
                rate,
                tokens,
            })
        })
        .map_err(internal)?
        .collect::<Result<_, _>>()
        .map_err(internal)?;
    Ok(QueueStats {
        counts,
        ended_total,
        oldest_ready,
        groups,
    })
}

pub(super) fn batch_depths(conn: &Connection, limit: usize) -> StoreResult<Vec<BatchDepth>> {
    let mut stmt = conn
        .prepare_cached(include_str!("sql/stats_batches.sql"))
        .map_err(internal)?;
    let rows = stmt
        .query_map([limit.min(MAX_LISTED) as i64], |r| {
            Ok(BatchDepth {
                batch: r.get(0)?,
                name: r.get(1)?,
                open: r.get(2)?,
                paused: r.get(3)?,
            })
        })
        .map_err(internal)?;
    rows.collect::<Result<_, _>>().map_err(internal)
}
