//! Bulk actions on the tasks a [`TaskSelect`] names: running failed and cancelled tasks
//! again (re-drive), cancelling, and changing priorities.
//!
//! A re-drive puts each task back as a submission would: its batch's gate may move down to
//! its order, which makes the ready tasks of the old gate wait again (tasks that have
//! started run on; reserved ones go back to waiting when their node hands them back), and
//! it gets its batch's next places in the fair queue, so that a large re-drive does not
//! jump ahead of other batches' work.

use std::collections::{BTreeMap, HashSet};

use rusqlite::{Transaction, params};

use super::{gate, internal, modules};
use crate::store::*;

/// A selected task, as `sql/select_tasks.sql` reads it.
struct Selected {
    id: TaskId,
    batch: BatchId,
    order: i64,
    state: i64,
    started: bool,
    module: String,
}

/// The tasks `select` names that are in one of `states` (stored codes, those the action
/// applies to) and shown at `now` in one of its states, in id order.
fn select(
    tx: &Transaction<'_>,
    select: &TaskSelect,
    states: &[i64],
    now: Micros,
) -> StoreResult<Vec<Selected>> {
    let outcomes = select.outcome_names().map(|names| json(&names));
    let modules = select.module_names().map(|names| json(&names));
    let ids = select.task_ids().map(|ids| json(&ids));
    let states = json(&select.codes(states));
    let mut stmt = tx
        .prepare_cached(include_str!("sql/select_tasks.sql"))
        .map_err(internal)?;
    let rows = stmt
        .query_map(
            params![
                select.task,
                select.batch,
                select.group,
                outcomes,
                states,
                modules,
                ids
            ],
            |r| {
                let task = Selected {
                    id: r.get(0)?,
                    batch: r.get(1)?,
                    order: r.get(2)?,
                    state: r.get(3)?,
                    started: r.get(4)?,
                    module: r.get(5)?,
                };
                let shown = select.shows(task.state, task.started, r.get(7)?, r.get(6)?, now);
                Ok(shown.then_some(task))
            },
        )
        .map_err(internal)?;
    let rows: Vec<Option<Selected>> = rows.collect::<Result<_, _>>().map_err(internal)?;
    Ok(rows.into_iter().flatten().collect())
}

/// The JSON text of a list the statement reads with `json_each`.
fn json<T: serde::Serialize>(list: &T) -> String {
    serde_json::to_string(list).expect("a list serializes")
}

/// Runs the failed (4) and cancelled (5) tasks `select` names again; returns how many.
pub(super) fn retry(tx: &Transaction<'_>, which: &TaskSelect) -> StoreResult<u64> {
    let tasks = select(tx, which, &[4, 5], now_micros())?;
    let mut checked = HashSet::new();
    for task in &tasks {
        if checked.insert(task.module.as_str()) && !modules::exists(tx, &task.module)? {
            return Err(errors::module_gone(task.id, &task.module));
        }
    }
    let mut by_batch: BTreeMap<BatchId, Vec<&Selected>> = BTreeMap::new();
    for task in &tasks {
        by_batch.entry(task.batch).or_default().push(task);
    }
    // Each batch's tenant; what each tenant gets back counts against its open limit.
    let mut tenants: BTreeMap<BatchId, Option<TenantId>> = BTreeMap::new();
    let mut adds: BTreeMap<TenantId, u64> = BTreeMap::new();
    for (&batch, tasks) in &by_batch {
        let tenant: Option<TenantId> = tx
            .prepare_cached("SELECT tenant_id FROM batches WHERE id = ?")
            .map_err(internal)?
            .query_row([batch], |r| r.get(0))
            .map_err(internal)?;
        if let Some(tenant) = tenant {
            *adds.entry(tenant).or_default() += tasks.len() as u64;
        }
        tenants.insert(batch, tenant);
    }
    for (tenant, adds) in adds {
        super::tenants::check_open(tx, Some(tenant), adds)?;
    }
    let vtime: i64 = tx
        .query_row("SELECT vtime FROM scheduler", [], |r| r.get(0))
        .map_err(internal)?;
    let mut open = tx
        .prepare_cached(include_str!("sql/submit_order.sql"))
        .map_err(internal)?;
    let mut again = tx
        .prepare_cached(include_str!("sql/task_retry.sql"))
        .map_err(internal)?;
    for (batch, tasks) in by_batch {
        let next_vseq: i64 = tx
            .prepare_cached("SELECT next_vseq FROM batches WHERE id = ?")
            .map_err(internal)?
            .query_row([batch], |r| r.get(0))
            .map_err(internal)?;
        // As a submission's: a batch that was idle does not jump ahead of others.
        let first_vseq = next_vseq.max(vtime);
        let old_gate = gate::current(tx, batch)?;
        let new_gate = admit::gate_with(old_gate, tasks.iter().map(|t| t.order));
        if let (Some(old), Some(new)) = (old_gate, new_gate)
            && new < old
        {
            gate::demote(tx, batch, old)?;
        }
        for (index, task) in tasks.iter().enumerate() {
            open.execute(params![batch, task.order, tenants[&batch]])
                .map_err(internal)?;
            let state = admit::first_state(task.order, new_gate);
            again
                .execute(params![state.code(), first_vseq + index as i64, task.id])
                .map_err(internal)?;
        }
        tx.prepare_cached("UPDATE batches SET next_vseq = ? WHERE id = ?")
            .map_err(internal)?
            .execute(params![first_vseq + tasks.len() as i64, batch])
            .map_err(internal)?;
    }
    let ids: Vec<TaskId> = tasks.iter().map(|t| t.id).collect();
    super::graph::redrive(tx, &ids)?;
    Ok(tasks.len() as u64)
}

/// Cancels the pending tasks `select` names and asks its claimed ones to stop.
pub(super) fn cancel(
    tx: &Transaction<'_>,
    which: &TaskSelect,
    now: Micros,
    server: bool,
) -> StoreResult<BulkCancel> {
    let tasks = select(tx, which, &[0, 1, 2], now)?;
    let mut result = BulkCancel::default();
    // Every pending one ends first, then the orders close, lowest first: an order that
    // opens meanwhile promotes only what was not cancelled.
    let mut closed: BTreeMap<(BatchId, i64), i64> = BTreeMap::new();
    {
        let mut end = tx
            .prepare_cached(include_str!("sql/task_cancel.sql"))
            .map_err(internal)?;
        let mut ask = tx
            .prepare_cached("UPDATE tasks SET cancel_requested = 1 WHERE id = ?")
            .map_err(internal)?;
        for task in &tasks {
            if task.state == 2 {
                ask.execute([task.id]).map_err(internal)?;
                result.stopping += 1;
            } else {
                end.execute(params![now, task.id]).map_err(internal)?;
                *closed.entry((task.batch, task.order)).or_default() += 1;
                result.cancelled += 1;
            }
        }
    }
    for ((batch, order), count) in closed {
        if gate::close_many(tx, batch, order, count)? {
            let kind = HookKind::BatchEnded;
            super::hooks::write(tx, batch, None, kind, None, None, server, now)?;
        }
    }
    // In id order, each with all it ends in turn before the next, as if cancelled one by
    // one: what a task after two of them sees first decides whether it is cancelled or
    // skipped.
    for task in tasks.iter().filter(|t| t.state != 2) {
        let ended = vec![(task.id, false)];
        super::graph::settle(tx, ended, now, server, &mut CompleteResult::default())?;
    }
    Ok(result)
}

/// Sets the priority of the tasks `select` names that have not started (pending, or
/// claimed without a start mark: reserved); returns how many changed.
pub(super) fn set_priority(
    tx: &Transaction<'_>,
    which: &TaskSelect,
    priority: i32,
) -> StoreResult<u64> {
    let tasks = select(tx, which, &[0, 1, 2], now_micros())?;
    let mut set = tx
        .prepare_cached("UPDATE tasks SET priority = ? WHERE id = ?")
        .map_err(internal)?;
    let mut changed = 0;
    for task in tasks.iter().filter(|t| t.state != 2 || !t.started) {
        set.execute(params![priority, task.id]).map_err(internal)?;
        changed += 1;
    }
    Ok(changed)
}
