//! Tasks and groups: submission, what a task reports, its output, priority and
//! cancellation, and group limits.

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::{digest_of, gate, graph, internal, modules, not_found};
use crate::store::*;

/// What a submission reads of its batch.
pub(super) const BATCH_SQL: &str =
    "SELECT sealed, priority, next_vseq, max_started_order, tenant_id FROM batches WHERE id = ?";

/// Adds tasks to a batch, at its gate or behind it; lowers the gate when a task comes in
/// below it. `trace`: the trace context they were submitted in, kept with each.
pub(super) fn submit(
    tx: &Transaction<'_>,
    batch: BatchId,
    specs: Vec<TaskSpec>,
    trace: Option<&str>,
    now: Micros,
) -> StoreResult<Vec<TaskId>> {
    type BatchRow = (bool, i32, i64, Option<i64>, Option<TenantId>);
    let (sealed, batch_priority, next_vseq, max_started, tenant): BatchRow = tx
        .prepare_cached(BATCH_SQL)
        .map_err(internal)?
        .query_row([batch], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .optional()
        .map_err(internal)?
        .ok_or_else(|| not_found("batch", batch))?;
    if sealed {
        return Err(errors::batch_sealed(batch));
    }
    super::quotas::submit(tx, batch, &specs)?;
    super::tenants::check_open(tx, tenant, specs.len() as u64)?;
    let mut known = std::collections::HashSet::new();
    admit::check_modules(&specs, |module| {
        Ok(known.contains(module) || {
            let stored = modules::exists(tx, &module.to_hex())?;
            stored && known.insert(*module)
        })
    })?;
    admit::check_orders(&specs, max_started, batch)?;
    let edges = {
        let stored = graph::read(tx, batch, &crate::store::graph::reads(&specs))?;
        crate::store::graph::plan(batch, &specs, &stored)?
    };
    let vtime: i64 = tx
        .query_row("SELECT vtime FROM scheduler", [], |r| r.get(0))
        .map_err(internal)?;
    let first_vseq = next_vseq.max(vtime);
    let old_gate = gate::current(tx, batch)?;
    let new_gate = admit::gate_after(old_gate, &specs);
    if let (Some(old), Some(new)) = (old_gate, new_gate)
        && new < old
    {
        gate::demote(tx, batch, old)?;
    }
    let mut ids = Vec::with_capacity(specs.len());
    {
        let mut insert = tx
            .prepare_cached(include_str!("sql/submit_task.sql"))
            .map_err(internal)?;
        let mut open = tx
            .prepare_cached(include_str!("sql/submit_order.sql"))
            .map_err(internal)?;
        let mut group = tx
            .prepare_cached("INSERT OR IGNORE INTO groups (key) VALUES (?)")
            .map_err(internal)?;
        for (index, spec) in specs.iter().enumerate() {
            let deps = edges.deps[index];
            let state = if deps > 0 {
                TaskState::Waiting
            } else {
                admit::first_state(spec.order, new_gate)
            };
            if let Some(key) = &spec.group {
                group.execute([key]).map_err(internal)?;
            }
            open.execute(params![batch, spec.order, tenant])
                .map_err(internal)?;
            insert
                .execute(params![
                    batch,
                    spec.module.to_hex(),
                    &spec.input,
                    spec.order,
                    &spec.group,
                    spec.priority.unwrap_or(batch_priority),
                    first_vseq + index as i64,
                    state.code(),
                    spec.max_attempts,
                    spec.backoff.as_millis() as i64,
                    limits::to_stored(&spec.limits),
                    serde_json::to_string(&spec.mounts).expect("mounts serialize"),
                    // 0: due at once (see the schema's tasks_delayed).
                    spec.not_before.unwrap_or(0),
                    now,
                    trace,
                    &spec.key,
                    deps,
                    tenant,
                    spec.cost,
                ])
                .map_err(internal)?;
            ids.push(tx.last_insert_rowid());
        }
    }
    tx.execute(
        "UPDATE batches SET next_vseq = ? WHERE id = ?",
        params![first_vseq + ids.len() as i64, batch],
    )
    .map_err(internal)?;
    if !edges.edges.is_empty() || specs.iter().any(|s| s.fan_in) {
        // No server webhook here: a submission ends a batch only when each task it adds
        // is after one that already failed; the batch's own webhook still hears of it.
        graph::write(tx, batch, &specs, &ids, &edges, now, false)?;
    }
    Ok(ids)
}

/// One task as reads report it, its state as it is now.
pub(super) fn get(conn: &Connection, task: TaskId) -> StoreResult<TaskInfo> {
    conn.prepare_cached(include_str!("sql/task_get.sql"))
        .map_err(internal)?
        .query_row([task, now_micros()], row)
        .optional()
        .map_err(internal)?
        .ok_or_else(|| not_found("task", task))
}

/// A task from a row of the columns of `sql/task_get.sql`.
pub(super) fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<TaskInfo> {
    Ok(TaskInfo {
        id: r.get(0)?,
        batch: r.get(1)?,
        module: digest_of(r.get(2)?),
        module_name: r.get(15)?,
        order: r.get(3)?,
        group: r.get(4)?,
        priority: r.get(5)?,
        state: TaskState::from_code(r.get(6)?).unwrap_or(TaskState::Failed),
        attempts: r.get(7)?,
        max_attempts: r.get(8)?,
        submitted_at: r.get(9)?,
        due_at: r.get(14)?,
        ended_at: r.get(10)?,
        outcome: r.get::<_, Option<String>>(11)?.and_then(|o| o.parse().ok()),
        error: r.get(12)?,
        error_size: r.get(17)?,
        output_size: r.get(13)?,
        input_size: r.get(16)?,
        key: r.get(18)?,
        cost: r.get(19)?,
    })
}

pub(super) fn output(conn: &Connection, task: TaskId) -> StoreResult<Option<Vec<u8>>> {
    conn.query_row("SELECT output FROM tasks WHERE id = ?", [task], |r| {
        r.get(0)
    })
    .optional()
    .map_err(internal)?
    .ok_or_else(|| not_found("task", task))
}

/// A task's input, as it was submitted.
pub(super) fn input(conn: &Connection, task: TaskId) -> StoreResult<Vec<u8>> {
    conn.query_row("SELECT input FROM tasks WHERE id = ?", [task], |r| r.get(0))
        .optional()
        .map_err(internal)?
        .ok_or_else(|| not_found("task", task))
}

/// Sets the priority of a task that has not started.
pub(super) fn set_priority(tx: &Transaction<'_>, task: TaskId, priority: i32) -> StoreResult<()> {
    let state = get(tx, task)?.state;
    if !matches!(
        state,
        TaskState::Waiting | TaskState::Ready | TaskState::Held | TaskState::Reserved
    ) {
        return Err(errors::priority_of_started(task, state));
    }
    tx.execute(
        "UPDATE tasks SET priority = ? WHERE id = ?",
        params![priority, task],
    )
    .map_err(internal)?;
    Ok(())
}

/// Cancels a pending task at once; asks a claimed one to stop.
pub(super) fn cancel(
    tx: &Transaction<'_>,
    task: TaskId,
    now: Micros,
    server: bool,
) -> StoreResult<CancelResult> {
    let info = get(tx, task)?;
    match info.state {
        TaskState::Waiting | TaskState::Ready | TaskState::Held => {
            tx.execute(include_str!("sql/task_cancel.sql"), params![now, task])
                .map_err(internal)?;
            if gate::close(tx, info.batch, info.order)? {
                super::hooks::batch_ended(tx, info.batch, server, now)?;
            }
            let mut ended = CompleteResult::default();
            graph::settle(tx, vec![(task, false)], now, server, &mut ended)?;
            Ok(CancelResult::Cancelled)
        }
        TaskState::Reserved | TaskState::Running => {
            tx.execute("UPDATE tasks SET cancel_requested = 1 WHERE id = ?", [task])
                .map_err(internal)?;
            Ok(CancelResult::Requested)
        }
        _ => Ok(CancelResult::AlreadyEnded),
    }
}

/// A group's limit, how many of its tasks are claimed, and how many are pending.
pub(super) fn group_get(conn: &Connection, key: String) -> StoreResult<GroupInfo> {
    // A paused group's limit is the one it gets back on resume.
    let (limit, running, paused, rate): (u32, u64, bool, Option<GroupRate>) = conn
        .query_row(
            "SELECT CASE WHEN paused THEN resume_lim ELSE lim END, running, paused,
                    rate_limit, rate_period, rate_burst
             FROM groups WHERE key = ?",
            [&key],
            |r| {
                let rate = GroupRate::from_stored(r.get(3)?, r.get(4)?, r.get(5)?);
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, rate))
            },
        )
        .optional()
        .map_err(internal)?
        .ok_or_else(|| not_found("group", &key))?;
    // State 0 waiting or 1 ready: pending.
    let waiting: u64 = conn
        .query_row(
            "SELECT COUNT(*) FROM tasks WHERE group_key = ? AND state IN (0, 1)",
            [&key],
            |r| r.get(0),
        )
        .map_err(internal)?;
    Ok(GroupInfo {
        key,
        limit,
        paused,
        running,
        pending: waiting,
        rate,
    })
}

/// A page of groups after the key `after`, idle ones too; only those `batch`'s tasks name
/// when given.
pub(super) fn group_list(
    conn: &Connection,
    after: &str,
    batch: Option<BatchId>,
    limit: usize,
) -> StoreResult<Vec<GroupRow>> {
    let mut stmt = conn
        .prepare_cached(include_str!("sql/group_list.sql"))
        .map_err(internal)?;
    let rows = stmt
        .query_map(params![after, batch, limit as i64], |r| {
            Ok(GroupRow {
                key: r.get(0)?,
                limit: r.get(1)?,
                paused: r.get(2)?,
                running: r.get::<_, i64>(3)?.max(0) as u64,
                rate: GroupRate::from_stored(r.get(4)?, r.get(5)?, r.get(6)?),
            })
        })
        .map_err(internal)?;
    rows.collect::<Result<_, _>>().map_err(internal)
}
