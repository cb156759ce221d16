//! Bulk actions on the tasks a [`TaskSelect`] names: running failed and cancelled tasks
//! again (re-drive), cancelling, and changing priorities.
//!
//! Each locks the selected task rows first (`sql/select_tasks.sql`), then the gates of
//! their batches, in id order. A re-drive puts each task back as a submission would: its
//! batch's gate may move down to its order, which makes the ready tasks of the old gate
//! wait again (tasks that have started run on; reserved ones go back to waiting when their
//! node hands them back, on the `Reclaim` this sends), and it gets its batch's next places
//! in the fair queue, so that a large re-drive does not jump ahead of other batches' work.

use std::collections::{BTreeMap, HashSet};

use deadpool_postgres::GenericClient;

use super::cached::Cached;
use super::{Commit, PostgresStore, gate};
use crate::store::*;

/// A selected task, as `sql/select_tasks.sql` reads it.
struct Selected {
    id: TaskId,
    batch: BatchId,
    order: i64,
    state: i32,
    started: bool,
    module: String,
}

/// Locks the tasks `which` names that are in one of `states` (stored codes, those the
/// action applies to) and shown at `now` (the database's time) in one of its states, in id
/// order.
async fn select(
    tx: &impl GenericClient,
    which: &TaskSelect,
    states: &[i32],
    now: Micros,
) -> StoreResult<Vec<Selected>> {
    let outcomes = which.outcome_names();
    let modules = which.module_names();
    let ids = which.task_ids();
    let action: Vec<i64> = states.iter().map(|&s| i64::from(s)).collect();
    let states: Vec<i32> = which.codes(&action).into_iter().map(|s| s as i32).collect();
    let rows = tx
        .rows(
            include_str!("sql/select_tasks.sql"),
            &[
                &which.task,
                &which.batch,
                &which.group,
                &outcomes,
                &states,
                &modules,
                &ids,
            ],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Selected {
            id: r.get(0),
            batch: r.get(1),
            order: r.get(2),
            state: r.get(3),
            started: r.get(4),
            module: r.get(5),
        })
        .zip(rows.iter())
        .filter(|(t, r)| which.shows(i64::from(t.state), t.started, r.get(7), r.get(6), now))
        .map(|(t, _)| t)
        .collect())
}

/// Takes the gate locks of the batches of `tasks`, in id order.
async fn lock_gates<'a>(
    tx: &impl GenericClient,
    tasks: impl IntoIterator<Item = &'a Selected>,
) -> StoreResult<()> {
    let mut batches: Vec<BatchId> = tasks.into_iter().map(|t| t.batch).collect();
    batches.sort_unstable();
    batches.dedup();
    for batch in batches {
        gate::lock(tx, batch).await?;
    }
    Ok(())
}

/// Runs the failed (4) and cancelled (5) tasks `which` names again; returns how many.
pub(super) async fn retry(store: &PostgresStore, which: TaskSelect) -> StoreResult<u64> {
    let now = store.db_time(now_micros());
    transaction!(store, Commit::Durable, |tx| {
        let tasks = select(tx, &which, &[4, 5], now).await?;
        if tasks.is_empty() {
            return Ok(0);
        }
        let mut modules: Vec<&str> = tasks.iter().map(|t| t.module.as_str()).collect();
        modules.sort_unstable();
        modules.dedup();
        let known: HashSet<String> = tx
            .rows(
                "SELECT digest FROM modules WHERE digest = ANY($1)",
                &[&modules],
            )
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect();
        if let Some(task) = tasks.iter().find(|t| !known.contains(&t.module)) {
            return Err(errors::module_gone(task.id, &task.module));
        }
        lock_gates(tx, &tasks).await?;
        let mut by_batch: BTreeMap<BatchId, Vec<&Selected>> = BTreeMap::new();
        for task in &tasks {
            by_batch.entry(task.batch).or_default().push(task);
        }
        let batches: Vec<BatchId> = by_batch.keys().copied().collect();
        let tenants: BTreeMap<BatchId, Option<TenantId>> = tx
            .rows(
                "SELECT id, tenant_id FROM batches WHERE id = ANY($1)",
                &[&batches],
            )
            .await?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let mut adds: BTreeMap<TenantId, u64> = BTreeMap::new();
        for (batch, tasks) in &by_batch {
            if let Some(&Some(tenant)) = tenants.get(batch) {
                *adds.entry(tenant).or_default() += tasks.len() as u64;
            }
        }
        super::tenants::check_open_many(tx, &adds).await?;
        let vtime: i64 = tx.row("SELECT vtime FROM scheduler", &[]).await?.get(0);
        for (batch, tasks) in by_batch {
            let tenant = tenants.get(&batch).copied().flatten();
            again(tx, batch, tenant, &tasks, vtime).await?;
        }
        let ids: Vec<TaskId> = tasks.iter().map(|t| t.id).collect();
        super::graph::redrive(tx, &ids).await?;
        // Reserved tasks above a gate that moved down go back, and wait.
        store.notify(tx, "r").await?;
        Ok(tasks.len() as u64)
    })
}

/// Puts one batch's ended `tasks` back at its gate or behind it, with the batch's next
/// places in the fair queue (not before `vtime`, as a submission's).
async fn again(
    tx: &impl GenericClient,
    batch: BatchId,
    tenant: Option<TenantId>,
    tasks: &[&Selected],
    vtime: i64,
) -> StoreResult<()> {
    let next_vseq: i64 = tx
        .row(
            "SELECT next_vseq FROM batches WHERE id = $1 FOR UPDATE",
            &[&batch],
        )
        .await?
        .get(0);
    let first_vseq = next_vseq.max(vtime);
    let old_gate = gate::current(tx, batch).await?;
    let new_gate = admit::gate_with(old_gate, tasks.iter().map(|t| t.order));
    if let (Some(old), Some(new)) = (old_gate, new_gate)
        && new < old
    {
        tx.run(include_str!("sql/submit_hold.sql"), &[&batch, &old])
            .await?;
    }
    gate::open(tx, batch, tenant, tasks.iter().map(|t| t.order)).await?;
    let ids: Vec<i64> = tasks.iter().map(|t| t.id).collect();
    let states: Vec<i32> = tasks
        .iter()
        .map(|t| admit::first_state(t.order, new_gate).code() as i32)
        .collect();
    let vseqs: Vec<i64> = (0..tasks.len() as i64).map(|i| first_vseq + i).collect();
    tx.run(include_str!("sql/task_retry.sql"), &[&ids, &states, &vseqs])
        .await?;
    tx.run(
        "UPDATE batches SET next_vseq = $1 WHERE id = $2",
        &[&(first_vseq + tasks.len() as i64), &batch],
    )
    .await?;
    Ok(())
}

/// Cancels the pending tasks `which` names and asks its claimed ones to stop.
pub(super) async fn cancel(
    store: &PostgresStore,
    which: TaskSelect,
    now: Micros,
) -> StoreResult<BulkCancel> {
    let now = store.db_time(now);
    transaction!(store, Commit::Durable, |tx| {
        let tasks = select(tx, &which, &[0, 1, 2], now).await?;
        let (claimed, pending): (Vec<&Selected>, Vec<&Selected>) =
            tasks.iter().partition(|t| t.state == 2);
        lock_gates(tx, pending.iter().copied()).await?;
        let pending_ids: Vec<i64> = pending.iter().map(|t| t.id).collect();
        let claimed_ids: Vec<i64> = claimed.iter().map(|t| t.id).collect();
        if !pending.is_empty() {
            tx.run(
                include_str!("sql/task_cancel_many.sql"),
                &[&now, &pending_ids],
            )
            .await?;
            let closed: Vec<(BatchId, i64, i64)> =
                pending.iter().map(|t| (t.batch, t.order, 1)).collect();
            let closed = gate::close(tx, &closed).await?;
            super::hooks::batch_ends(tx, &closed, store.server_hook(), now).await?;
            let ended: Vec<(TaskId, BatchId)> = pending.iter().map(|t| (t.id, t.batch)).collect();
            let server = store.server_hook();
            let mut result = CompleteResult::default();
            // In id order, each with all it ends in turn before the next, as if cancelled
            // one by one.
            for task in &pending {
                let ended = vec![(task.id, false)];
                super::graph::settle(tx, ended, now, server, &mut result).await?;
            }
            store.notify_batches(tx, &ended).await?;
        }
        if !claimed.is_empty() {
            tx.run(
                "UPDATE tasks SET cancel_requested = TRUE WHERE id = ANY($1)",
                &[&claimed_ids],
            )
            .await?;
            store.notify(tx, "c").await?;
        }
        Ok(BulkCancel {
            cancelled: pending.len() as u64,
            stopping: claimed.len() as u64,
        })
    })
}

/// Sets the priority of the tasks `which` names that have not started (pending, or
/// claimed without a start mark: reserved); returns how many changed.
pub(super) async fn set_priority(
    store: &PostgresStore,
    which: TaskSelect,
    priority: i32,
) -> StoreResult<u64> {
    let now = store.db_time(now_micros());
    transaction!(store, Commit::Durable, |tx| {
        let tasks = select(tx, &which, &[0, 1, 2], now).await?;
        let ids: Vec<i64> = tasks
            .iter()
            .filter(|t| t.state != 2 || !t.started)
            .map(|t| t.id)
            .collect();
        if !ids.is_empty() {
            tx.run(
                include_str!("sql/task_set_priority_many.sql"),
                &[&priority, &ids],
            )
            .await?;
            store.notify(tx, "r").await?;
        }
        Ok(ids.len() as u64)
    })
}
