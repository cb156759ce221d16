//! The execution log and what people read of the scheduler: attempt records, the
//! running view, the counting of a batch's tasks per state, and pruning what ended long
//! ago.

use rusqlite::{Connection, Transaction, params};

use super::complete::Running;
use super::{digest_of, internal};
use crate::runtime::Outcome;
use crate::store::*;

/// Runs a `SELECT state, COUNT(*) ... GROUP BY state` query into a progress count.
pub(super) fn count_states(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> StoreResult<Progress> {
    let mut progress = Progress::default();
    let mut stmt = conn.prepare_cached(sql).map_err(internal)?;
    let rows = stmt
        .query_map(params, |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, u64>(1)?))
        })
        .map_err(internal)?;
    for row in rows {
        let (state, count) = row.map_err(internal)?;
        if let Some(state) = TaskState::from_code(state) {
            progress.add(state, count);
        }
    }
    Ok(progress)
}

/// Attempt records in the order they were written (or newest first), filtered. Each
/// filter given adds its own clause, so that SQLite can search an index of the log for
/// it (`attempts_task`, `attempts_batch`, `attempts_group`, `attempts_outcome`,
/// `attempts_started`): with plans fixed before values are bound (see `schema.rs`), one
/// statement with `?N IS NULL OR ...` for every filter would scan the whole log.
pub(super) fn attempt_list(
    conn: &Connection,
    filter: AttemptFilter,
) -> StoreResult<Vec<(i64, AttemptRecord)>> {
    let mut sql = String::from(include_str!("sql/attempt_list.sql").trim_end());
    let mut args: Vec<rusqlite::types::Value> = Vec::new();
    let mut add = |clause: &str, values: Vec<rusqlite::types::Value>| {
        sql.push_str(clause);
        args.extend(values);
    };
    if let Some(batch) = filter.batch {
        add(" AND a.batch_id = ?", vec![batch.into()]);
    }
    if let Some(task) = filter.task {
        add(" AND a.task_id = ?", vec![task.into()]);
    }
    if let Some(group) = filter.group.clone() {
        add(" AND a.group_key = ?", vec![group.into()]);
    }
    if let Some(outcome) = filter.outcome {
        add(
            " AND a.outcome = ?",
            vec![outcome.as_str().to_owned().into()],
        );
    }
    if filter.since.is_some() || filter.until.is_some() {
        let (since, until) = filter.time_range();
        let count = if filter.task.is_some() || filter.batch.is_some() {
            0
        } else {
            range_count(conn, since, until)?
        };
        if filter.reads_by_time(count) {
            add(
                " AND a.id IN (SELECT id FROM attempts INDEXED BY attempts_started
                   WHERE started_at >= ? AND started_at < ?)",
                vec![since.into(), until.into()],
            );
        }
        // `+`: never a way into the log by itself (plans are fixed before the values are
        // known): the range is read from its index above, or met walking the log.
        add(" AND +a.started_at >= ?", vec![since.into()]);
        add(" AND +a.started_at < ?", vec![until.into()]);
    }
    if let Some(after) = filter.after {
        add(" AND a.id > ?", vec![after.into()]);
    }
    if let Some(before) = filter.before {
        add(" AND a.id < ?", vec![before.into()]);
    }
    sql.push_str(if filter.newest_first {
        " ORDER BY a.id DESC LIMIT ?"
    } else {
        " ORDER BY a.id LIMIT ?"
    });
    args.push((filter.limit.unwrap_or(1000) as i64).into());
    let mut stmt = conn.prepare_cached(&sql).map_err(internal)?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(args), |r| {
            let logs: Option<String> = r.get(12)?;
            Ok((
                r.get(0)?,
                AttemptRecord {
                    task: r.get(1)?,
                    batch: r.get(2)?,
                    module: digest_of(r.get(15)?),
                    module_name: r.get(16)?,
                    attempt: r.get(3)?,
                    node: r.get(4)?,
                    slot: r.get::<_, Option<i64>>(5)?.map(|s| s as usize),
                    group: r.get(6)?,
                    order: r.get(7)?,
                    started_at: r.get(8)?,
                    ended_at: r.get(9)?,
                    cpu_micros: r.get(17)?,
                    memory_mib_seconds: r.get(18)?,
                    http_bytes: r.get::<_, Option<i64>>(19)?.map(|b| b as u64),
                    outcome: r.get::<_, String>(10)?.parse().unwrap_or(Outcome::Lost),
                    error: r.get(11)?,
                    logs: logs
                        .and_then(|l| serde_json::from_str(&l).ok())
                        .unwrap_or_default(),
                    stdout: r.get::<_, Option<Vec<u8>>>(13)?.unwrap_or_default(),
                    stderr: r.get::<_, Option<Vec<u8>>>(14)?.unwrap_or_default(),
                    cut: Vec::new(),
                },
            ))
        })
        .map_err(internal)?;
    rows.collect::<Result<_, _>>().map_err(internal)
}

/// What the batch's ended attempts have used (a batch's log is read along its index).
pub(super) const USAGE_SQL: &str = include_str!("sql/batch_usage.sql");

pub(super) fn batch_usage(conn: &Connection, batch: BatchId) -> StoreResult<BatchUsage> {
    conn.prepare_cached(USAGE_SQL)
        .map_err(internal)?
        .query_row([batch], |r| {
            Ok(BatchUsage {
                batch,
                attempts: r.get::<_, i64>(0)? as u64,
                slot_micros: r.get::<_, i64>(1)? as u64,
                cpu_micros: r.get::<_, i64>(2)? as u64,
                memory_mib_seconds: r.get(3)?,
                http_bytes: r.get::<_, i64>(4)? as u64,
            })
        })
        .map_err(internal)
}

/// How many attempts started in `[since, until)`, counted up to past
/// [`AttemptFilter::LONG_RANGE`].
fn range_count(conn: &Connection, since: Micros, until: Micros) -> StoreResult<i64> {
    conn.prepare_cached(include_str!("sql/attempt_range_count.sql"))
        .map_err(internal)?
        .query_row(params![since, until, AttemptFilter::LONG_RANGE + 1], |r| {
            r.get(0)
        })
        .map_err(internal)
}

pub(super) fn running_list(conn: &Connection) -> StoreResult<Vec<RunningTask>> {
    let mut stmt = conn
        .prepare_cached(include_str!("sql/running_list.sql"))
        .map_err(internal)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(RunningTask {
                task: r.get(0)?,
                batch: r.get(1)?,
                node: r.get(2)?,
                slot: None,
                attempt: r.get(3)?,
                group: r.get(4)?,
                order: r.get(5)?,
                since: r.get(6)?,
                lease_expires: r.get(7)?,
            })
        })
        .map_err(internal)?;
    rows.collect::<Result<_, _>>().map_err(internal)
}

/// Deletes up to `chunk` tasks that ended before `before`, with their attempt records;
/// returns how many tasks it deleted.
pub(super) fn prune(tx: &Transaction<'_>, before: Micros, chunk: usize) -> StoreResult<usize> {
    super::quotas::prune(tx, before, chunk)?;
    tx.execute(
        include_str!("sql/prune_attempts.sql"),
        params![before, chunk as i64],
    )
    .map_err(internal)?;
    let deleted = tx
        .execute(
            include_str!("sql/prune_tasks.sql"),
            params![before, chunk as i64],
        )
        .map_err(internal)?;
    Ok(deleted)
}

/// Records an ended attempt of `task` in the execution log. An error that repeats the
/// task's previous attempt's is kept once (`sql/attempt_insert_repeat.sql`), and what its
/// batch was charged for it given back.
pub(super) fn record(
    tx: &Transaction<'_>,
    task: &Running,
    end: &AttemptEnd<'_>,
) -> StoreResult<()> {
    let logs =
        (!end.logs.is_empty()).then(|| serde_json::to_string(end.logs).expect("logs serialize"));
    let may_repeat = end.may_repeat_error(task.attempts.into());
    let sql = if may_repeat {
        include_str!("sql/attempt_insert_repeat.sql")
    } else {
        include_str!("sql/attempt_insert.sql")
    };
    let mut stmt = tx.prepare_cached(sql).map_err(internal)?;
    let values = params![
        task.id,
        task.batch,
        task.attempts,
        end.node,
        end.slot.map(|s| s as i64),
        task.lease_token,
        task.group,
        task.order,
        end.started_at,
        end.ended_at,
        end.outcome.as_str(),
        end.error,
        logs,
        (!end.stdout.is_empty()).then_some(end.stdout),
        (!end.stderr.is_empty()).then_some(end.stderr),
        end.cpu_micros,
        end.memory_mib_seconds,
        end.http_bytes.map(|b| b as i64),
    ];
    if !may_repeat {
        stmt.execute(values).map_err(internal)?;
        return Ok(());
    }
    let repeated: bool = stmt.query_row(values, |r| r.get(0)).map_err(internal)?;
    if repeated {
        super::quotas::add(tx, task.batch, 0, -end.repeated_error_refund())?;
    }
    Ok(())
}
