//! What happens to a claimed task after the claim: lease renewal, the end of its attempt
//! (success, retry, failure, cancellation), the rescue of attempts whose node is gone, and
//! the hand-back of tasks a node claimed and did not start.
//!
//! Every end locks the task row first, frees the slots its batch and group counted, drops
//! its lease, writes its attempt record, and closes its place in its order (which may open
//! the batch's next order).

use std::collections::HashMap;

use deadpool_postgres::GenericClient;

use super::cached::Cached;
use super::log::AttemptRows;
use super::{Commit, PostgresStore, gate, graph, hooks, pg};
use crate::runtime::Outcome;
use crate::store::*;

pub(super) async fn complete(
    store: &PostgresStore,
    completions: Vec<Completion>,
    now: Micros,
) -> StoreResult<CompleteResult> {
    let now = store.db_time(now);
    let mut completions: Vec<Completion> = completions
        .into_iter()
        .map(|c| Completion {
            started_at: store.db_time(c.started_at),
            ended_at: store.db_time(c.ended_at),
            ..c.bounded()
        })
        .collect();
    let server = store.server_hook();
    transaction!(store, Commit::Bookkeeping, |tx| {
        super::quotas::charge(tx, &mut completions).await?;
        let result = end_attempts(tx, &completions, now, server).await?;
        store.notify_ended(tx, &result).await?;
        Ok(result)
    })
}

/// Hands back tasks a node claimed and did not start.
pub(super) async fn hand_back(
    store: &PostgresStore,
    tasks: Vec<(TaskId, i64)>,
    now: Micros,
) -> StoreResult<CompleteResult> {
    let now = store.db_time(now);
    let server = store.server_hook();
    transaction!(store, Commit::Bookkeeping, |tx| {
        let result = put_back(tx, &tasks, now, server).await?;
        store.notify(tx, "w").await?;
        store.notify_ended(tx, &result).await?;
        Ok(result)
    })
}

/// Extends a node's leases; returns its tasks whose cancellation was asked.
pub(super) async fn renew(
    store: &PostgresStore,
    node: String,
    until: Micros,
) -> StoreResult<Vec<TaskId>> {
    let until = store.db_time(until);
    transaction!(store, Commit::Bookkeeping, |tx| {
        let rows = tx
            .rows(include_str!("sql/lease_renew.sql"), &[&until, &node])
            .await?;
        Ok(rows
            .iter()
            .filter(|r| r.get::<_, bool>(1))
            .map(|r| r.get(0))
            .collect())
    })
}

pub(super) async fn rescue(
    store: &PostgresStore,
    node: Option<String>,
    now: Micros,
) -> StoreResult<CompleteResult> {
    let now = store.db_time(now);
    let server = store.server_hook();
    transaction!(store, Commit::Bookkeeping, |tx| {
        let result = end_lost(tx, node.as_deref(), now, server).await?;
        store.notify_ended(tx, &result).await?;
        Ok(result)
    })
}

/// What the completion of an attempt needs to know about its task.
pub(super) struct Running {
    pub(super) id: TaskId,
    pub(super) batch: BatchId,
    pub(super) order: i64,
    pub(super) group: Option<String>,
    pub(super) attempts: i32,
    pub(super) max_attempts: i32,
    pub(super) backoff_ms: i64,
    pub(super) cancel_requested: bool,
    pub(super) lease_token: i64,
    pub(super) lease_node: String,
    /// When it started on its slot, or else when it was claimed.
    pub(super) started_at: Micros,
    pub(super) limited: bool,
    pub(super) halts: bool,
    /// Whether its batch has a webhook.
    pub(super) hooked: bool,
    /// How many times it was deferred.
    pub(super) deferrals: i32,
    pub(super) tenant: Option<TenantId>,
}

fn running_row(r: &tokio_postgres::Row) -> Running {
    Running {
        id: r.get(0),
        batch: r.get(1),
        order: r.get(2),
        group: r.get(3),
        attempts: r.get(4),
        max_attempts: r.get(5),
        backoff_ms: r.get(6),
        cancel_requested: r.get(7),
        lease_token: r.get(8),
        lease_node: r.get(9),
        started_at: r.get(10),
        limited: r.get(11),
        halts: r.get(12),
        hooked: r.get(13),
        deferrals: r.get(14),
        tenant: r.get(15),
    }
}

/// Slots a set of ended attempts frees, summed per batch and group, written in one
/// statement each.
#[derive(Default)]
struct Freed {
    batches: HashMap<BatchId, i32>,
    groups: HashMap<String, i32>,
    /// Per tenant: its slots freed, and what their attempts used.
    tenants: HashMap<TenantId, (i32, Used)>,
    /// Groups held after a deferred attempt, until when.
    holds: HashMap<String, Micros>,
}

impl Freed {
    /// Frees `task`'s slots, whose attempt used `used`.
    fn add(&mut self, task: &Running, used: Used) {
        if task.limited {
            *self.batches.entry(task.batch).or_default() += 1;
        }
        if let Some(group) = &task.group {
            *self.groups.entry(group.clone()).or_default() += 1;
        }
        if let Some(tenant) = task.tenant {
            let freed = self.tenants.entry(tenant).or_default();
            freed.0 += 1;
            freed.1 += used;
        }
    }

    /// Holds `task`'s group, if it has one, until `until` (store/hold.rs).
    fn hold(&mut self, task: &Running, until: Micros) {
        if let Some(group) = &task.group {
            let hold = self.holds.entry(group.clone()).or_default();
            *hold = (*hold).max(until);
        }
    }

    /// Writes the slots freed; returns whether a tenant is held for its spent budget then.
    async fn write(self, tx: &impl GenericClient, now: Micros) -> StoreResult<bool> {
        let mut tenant_held = false;
        if !self.batches.is_empty() {
            let mut rows: Vec<(i64, i32)> = self.batches.into_iter().collect();
            rows.sort_unstable();
            let (ids, counts): (Vec<i64>, Vec<i32>) = rows.into_iter().unzip();
            let stmt = tx
                .prepare_cached(include_str!("sql/complete_free_batches.sql"))
                .await
                .map_err(pg)?;
            tx.execute(&stmt, &[&ids, &counts]).await.map_err(pg)?;
        }
        if !self.groups.is_empty() {
            let mut rows: Vec<(String, i32)> = self.groups.into_iter().collect();
            rows.sort_unstable();
            let holds: Vec<Micros> = rows
                .iter()
                .map(|(key, _)| self.holds.get(key).copied().unwrap_or(0))
                .collect();
            let (keys, counts): (Vec<String>, Vec<i32>) = rows.into_iter().unzip();
            let stmt = tx
                .prepare_cached(include_str!("sql/complete_free_groups.sql"))
                .await
                .map_err(pg)?;
            tx.execute(&stmt, &[&keys, &counts, &holds])
                .await
                .map_err(pg)?;
        }
        if !self.tenants.is_empty() {
            let mut rows: Vec<(TenantId, (i32, Used))> = self.tenants.into_iter().collect();
            rows.sort_unstable_by_key(|r| r.0);
            let ids: Vec<i64> = rows.iter().map(|r| r.0).collect();
            let counts: Vec<i32> = rows.iter().map(|r| r.1.0).collect();
            let held: Vec<i64> = rows.iter().map(|r| r.1.1.slot_micros).collect();
            let cpu: Vec<i64> = rows.iter().map(|r| r.1.1.cpu_micros).collect();
            let memory: Vec<f64> = rows.iter().map(|r| r.1.1.memory_mib_seconds).collect();
            let ran: Vec<i64> = rows.iter().map(|r| r.1.1.attempts).collect();
            let memory_ms: Vec<i64> = rows.iter().map(|r| r.1.1.memory_mib_ms).collect();
            let http: Vec<i64> = rows.iter().map(|r| r.1.1.http_bytes).collect();
            let stmt = tx
                .prepare_cached(include_str!("sql/complete_free_tenants.sql"))
                .await
                .map_err(pg)?;
            let rows = tx
                .query(
                    &stmt,
                    &[
                        &ids, &counts, &held, &cpu, &memory, &now, &ran, &memory_ms, &http,
                    ],
                )
                .await
                .map_err(pg)?;
            tenant_held = rows.iter().any(|r| r.get::<_, bool>(0));
        }
        Ok(tenant_held)
    }
}

/// Deletes the leases of tasks whose attempt ended.
async fn drop_leases(tx: &impl GenericClient, tasks: &[TaskId]) -> StoreResult<()> {
    if tasks.is_empty() {
        return Ok(());
    }
    let stmt = tx
        .prepare_cached("DELETE FROM leases WHERE task_id = ANY($1)")
        .await
        .map_err(pg)?;
    tx.execute(&stmt, &[&tasks]).await.map_err(pg)?;
    Ok(())
}

/// What ending a set of attempts writes besides the tasks themselves: their attempt
/// records, the slots they free, the orders they close, the batches they halt, and the
/// events their webhooks are owed (`server`: the server has one, and hears of all).
#[derive(Default)]
struct Ending<'a> {
    attempts: AttemptRows<'a>,
    freed: Freed,
    closed: Vec<(BatchId, i64, i64)>,
    halted: Vec<(BatchId, TaskId)>,
    server: bool,
    /// The batches of the tasks ended that someone listens to.
    hooked: Vec<BatchId>,
    /// Final failures someone listens to: batch, task, outcome, error.
    failed: Vec<(BatchId, TaskId, Outcome, Option<String>)>,
    /// Successes that tasks run after, settled once the gates are closed.
    leading: Vec<(TaskId, bool)>,
}

impl<'a> Ending<'a> {
    fn new(server: bool) -> Self {
        Ending {
            server,
            ..Ending::default()
        }
    }

    /// A task of a batch that someone listens to has ended.
    fn listen(&mut self, task: &Running) {
        if self.server || task.hooked {
            self.hooked.push(task.batch);
        }
    }

    /// A success, its task already ended.
    fn succeeded(&mut self, task: &Running, end: AttemptEnd<'a>, result: &mut CompleteResult) {
        self.freed.add(task, end.used());
        self.attempts.push(task, end);
        self.closed.push((task.batch, task.order, 1));
        self.listen(task);
        result.ended.push((task.id, task.batch));
    }

    /// A suspension: the task waits for its children, its slots freed.
    async fn suspended(
        &mut self,
        tx: &impl GenericClient,
        task: &Running,
        end: AttemptEnd<'a>,
        state: Option<&[u8]>,
        result: &mut CompleteResult,
    ) -> StoreResult<()> {
        self.freed.add(task, end.used());
        self.attempts.push(task, end);
        super::spawn::suspend(tx, task.id, task.batch, state.unwrap_or_default()).await?;
        result.retried += 1;
        Ok(())
    }

    /// Any other end: the task is retried, or ends failed or cancelled.
    async fn other(
        &mut self,
        tx: &impl GenericClient,
        task: &Running,
        end: AttemptEnd<'a>,
        defer: Option<Defer>,
        now: Micros,
        result: &mut CompleteResult,
    ) -> StoreResult<()> {
        let (outcome, error) = (end.outcome, end.error.map(str::to_owned));
        self.freed.add(task, end.used());
        self.attempts.push(task, end);
        let ended = match finish(tx, task, outcome, error, defer, now, result).await? {
            Finished::Ended(state, outcome, error) => Some((state, outcome, error)),
            Finished::Back { hold } => {
                if let Some(until) = hold {
                    self.freed.hold(task, until);
                }
                None
            }
        };
        if let Some((state, outcome, error)) = ended {
            self.closed.push((task.batch, task.order, 1));
            // At once, in the order reported, as a halt (below) reaches what follows it:
            // a batch a previous end halted has nothing pending left to settle.
            if !self.halted.iter().any(|&(batch, _)| batch == task.batch) {
                let well = state == TaskState::Succeeded;
                graph::settle(tx, vec![(task.id, well)], now, self.server, result).await?;
            }
            self.listen(task);
            if state == TaskState::Failed && task.halts {
                self.halted.push((task.batch, task.id));
            }
            if state == TaskState::Failed && (self.server || task.hooked) {
                self.failed.push((task.batch, task.id, outcome, error));
            }
        }
        Ok(())
    }

    /// Writes it all; marks `result` when events were written for webhooks, and when a
    /// tenant is held for its spent budget.
    async fn write(
        self,
        tx: &impl GenericClient,
        now: Micros,
        result: &mut CompleteResult,
    ) -> StoreResult<()> {
        let (_, _, tenant_held, closed) = tokio::try_join!(
            self.attempts.write(tx),
            drop_leases(tx, self.attempts.tasks()),
            self.freed.write(tx, now),
            gate::close(tx, &self.closed),
        )?;
        let mut hooked = false;
        for (batch, task, outcome, error) in &self.failed {
            let (outcome, error) = (Some(outcome.as_str()), error.as_deref());
            let kind = HookKind::TaskFailed;
            hooked |= hooks::write(
                tx,
                *batch,
                Some(*task),
                kind,
                outcome,
                error,
                self.server,
                now,
            )
            .await?;
        }
        let mut settled = CompleteResult::default();
        graph::settle(tx, self.leading, now, self.server, &mut settled).await?;
        hooked |= settled.hooked;
        let mut ends: Vec<BatchId> = closed
            .into_iter()
            .filter(|b| self.hooked.contains(b))
            .collect();
        for (batch, task) in self.halted {
            let reason = fate::halt_reason(task);
            if gate::cancel_pending(tx, batch, now, &reason).await? > 0
                && self.hooked.contains(&batch)
                && !ends.contains(&batch)
            {
                ends.push(batch);
            }
        }
        hooked |= hooks::batch_ends(tx, &ends, self.server, now).await?;
        result.hooked |= hooked;
        result.tenant_held |= tenant_held;
        Ok(())
    }
}

/// Ends attempts: successes in a few statements for all of them; the rest (retries,
/// failures, cancellations) one task at a time.
async fn end_attempts(
    tx: &impl GenericClient,
    completions: &[Completion],
    now: Micros,
    server: bool,
) -> StoreResult<CompleteResult> {
    let mut result = CompleteResult::default();
    let mut ending = Ending::new(server);
    let mut succeeded: Vec<&Completion> = completions
        .iter()
        .filter(|c| c.outcome.is_success())
        .collect();
    // One order of row locking across transactions.
    succeeded.sort_by_key(|c| c.task);
    if !succeeded.is_empty() {
        let ids: Vec<i64> = succeeded.iter().map(|c| c.task).collect();
        let tokens: Vec<i64> = succeeded.iter().map(|c| c.lease_token).collect();
        let outputs: Vec<Option<&[u8]>> = succeeded.iter().map(|c| c.output.as_deref()).collect();
        let stmt = tx
            .prepare_cached(include_str!("sql/complete_succeeded.sql"))
            .await
            .map_err(pg)?;
        let rows = tx
            .query(&stmt, &[&now, &ids, &tokens, &outputs])
            .await
            .map_err(pg)?;
        let mut by_id: HashMap<TaskId, &Completion> =
            succeeded.iter().map(|c| (c.task, *c)).collect();
        for r in &rows {
            let c = by_id
                .remove(&r.get::<_, i64>(0))
                .expect("a task ended once");
            let task = Running {
                id: c.task,
                batch: r.get(1),
                order: r.get(2),
                group: r.get(3),
                attempts: r.get(4),
                max_attempts: 0,
                backoff_ms: 0,
                cancel_requested: false,
                lease_token: c.lease_token,
                lease_node: String::new(),
                started_at: 0,
                limited: r.get(5),
                halts: false,
                hooked: r.get(6),
                deferrals: 0,
                tenant: r.get(8),
            };
            if r.get::<_, bool>(7) {
                ending.leading.push((task.id, true));
            }
            ending.succeeded(&task, AttemptEnd::of(c), &mut result);
        }
        result.stale += by_id.len();
        for c in by_id.into_values() {
            super::quotas::refund(tx, c).await?;
        }
    }

    // Applied in the order reported (a halt reaches what comes after it); the rows are
    // locked in one order across transactions.
    let others: Vec<&Completion> = completions
        .iter()
        .filter(|c| !c.outcome.is_success())
        .collect();
    if !others.is_empty() {
        let ids: Vec<i64> = others.iter().map(|c| c.task).collect();
        let running: HashMap<TaskId, Running> = tx
            .rows(include_str!("sql/running_lock.sql"), &[&ids])
            .await?
            .iter()
            .map(|r| {
                let task = running_row(r);
                (task.id, task)
            })
            .collect();
        for c in others {
            let Some(task) = running
                .get(&c.task)
                .filter(|t| t.lease_token == c.lease_token)
            else {
                super::quotas::refund(tx, c).await?;
                result.stale += 1;
                continue;
            };
            if c.outcome == Outcome::Suspended
                && !task.cancel_requested
                && !halted(tx, task).await?
            {
                ending
                    .suspended(
                        tx,
                        task,
                        AttemptEnd::of(c),
                        c.output.as_deref(),
                        &mut result,
                    )
                    .await?;
                continue;
            }
            ending
                .other(tx, task, AttemptEnd::of(c), c.defer, now, &mut result)
                .await?;
        }
    }
    ending.write(tx, now, &mut result).await?;
    Ok(result)
}

/// What [`finish`] did with a task.
enum Finished {
    /// Ended with this state, outcome and error.
    Ended(TaskState, Outcome, Option<String>),
    /// Back in the queue; with a hold of its group until then, after a deferral.
    Back { hold: Option<Micros> },
}

/// Ends a task that did not succeed, or puts it back for another attempt. Its slots are
/// freed, and its group held, by the caller.
async fn finish(
    tx: &impl GenericClient,
    task: &Running,
    outcome: Outcome,
    error: Option<String>,
    defer: Option<Defer>,
    now: Micros,
    result: &mut CompleteResult,
) -> StoreResult<Finished> {
    let failed = fate::Failed {
        outcome,
        error,
        attempts: task.attempts as u32,
        max_attempts: task.max_attempts as u32,
        backoff_ms: task.backoff_ms,
        cancel_requested: task.cancel_requested,
        defer,
        deferrals: task.deferrals.max(0) as u32,
    };
    let halted = failed.may_retry() && halted(tx, task).await?;
    let (not_before, error, given_back, hold) = match failed.fate(halted, now) {
        fate::Fate::Retry {
            not_before,
            error,
            given_back,
        } => (not_before, error, given_back, None),
        fate::Fate::Defer { until, error } => (until, error, false, Some(until)),
        fate::Fate::End {
            state,
            outcome,
            error,
        } => return end(tx, task, state, outcome, error, now, result).await,
    };
    // Ready or waiting, by its batch's gate: hold it still.
    gate::lock(tx, task.batch).await?;
    let stmt = tx
        .prepare_cached(include_str!("sql/complete_retry.sql"))
        .await
        .map_err(pg)?;
    let given_back = i32::from(given_back);
    let deferred = i32::from(hold.is_some());
    tx.execute(
        &stmt,
        &[
            &not_before,
            &outcome.as_str(),
            &error,
            &task.id,
            &given_back,
            &deferred,
        ],
    )
    .await
    .map_err(pg)?;
    result.retried += 1;
    Ok(Finished::Back { hold })
}

/// Ends a task that did not succeed for good.
async fn end(
    tx: &impl GenericClient,
    task: &Running,
    state: TaskState,
    outcome: Outcome,
    error: Option<String>,
    now: Micros,
    result: &mut CompleteResult,
) -> StoreResult<Finished> {
    let stmt = tx
        .prepare_cached(include_str!("sql/complete_ended.sql"))
        .await
        .map_err(pg)?;
    tx.execute(
        &stmt,
        &[
            &(state.code() as i32),
            &now,
            &outcome.as_str(),
            &error,
            &task.id,
        ],
    )
    .await
    .map_err(pg)?;
    result.ended.push((task.id, task.batch));
    Ok(Finished::Ended(state, outcome, error))
}

/// Ends as `lost` the attempts whose lease expired (or all of `node`'s), retrying their
/// tasks while attempts remain. Rows another transaction holds are left for the next
/// rescue, except `node`'s own, which it waits for.
async fn end_lost(
    tx: &impl GenericClient,
    node: Option<&str>,
    now: Micros,
    server: bool,
) -> StoreResult<CompleteResult> {
    if let Some(node) = node {
        // Locked by this transaction, they are not skipped below.
        tx.run(include_str!("sql/running_lock_node.sql"), &[&node])
            .await?;
    }
    let mut result = CompleteResult::default();
    let lost: Vec<Running> = tx
        .rows(include_str!("sql/running_lost.sql"), &[&now, &node])
        .await?
        .iter()
        .map(running_row)
        .collect();
    let errors: Vec<String> = lost
        .iter()
        .map(|task| {
            let restarted = Some(task.lease_node.as_str()) == node;
            fate::lost_reason(&task.lease_node, restarted)
        })
        .collect();
    let mut ending = Ending::new(server);
    for (task, error) in lost.iter().zip(&errors) {
        let end = AttemptEnd {
            node: &task.lease_node,
            slot: None,
            started_at: task.started_at,
            ended_at: now,
            cpu_micros: None,
            memory_mib_seconds: None,
            http_bytes: None,
            outcome: Outcome::Lost,
            error: Some(error),
            logs: &[],
            stdout: &[],
            stderr: &[],
        };
        ending.other(tx, task, end, None, now, &mut result).await?;
    }
    ending.write(tx, now, &mut result).await?;
    Ok(result)
}

/// Puts claimed tasks back as they were before the claim, attempt not counted; those whose
/// cancellation was asked end cancelled instead.
async fn put_back(
    tx: &impl GenericClient,
    tasks: &[(TaskId, i64)],
    now: Micros,
    server: bool,
) -> StoreResult<CompleteResult> {
    let mut tasks = tasks.to_vec();
    tasks.sort_unstable();
    let ids: Vec<i64> = tasks.iter().map(|&(id, _)| id).collect();
    let running: Vec<Running> = tx
        .rows(include_str!("sql/running_lock.sql"), &[&ids])
        .await?
        .iter()
        .map(running_row)
        .collect();
    let tokens: HashMap<TaskId, i64> = tasks.into_iter().collect();
    let mut result = CompleteResult::default();
    let mut freed = Freed::default();
    let (mut back, mut cancelled, mut closed) = (Vec::new(), Vec::new(), Vec::new());
    let mut hooked = Vec::new();
    for task in &running {
        if tokens.get(&task.id) != Some(&task.lease_token) {
            continue;
        }
        // Not started: it held its slot for no run.
        freed.add(task, Used::default());
        if task.cancel_requested {
            // Its cancellation reached it before it started: it ends as a pending one would.
            cancelled.push(task.id);
            closed.push((task.batch, task.order, 1));
            if server || task.hooked {
                hooked.push(task.batch);
            }
            result.ended.push((task.id, task.batch));
        } else {
            back.push(task.id);
        }
    }
    if !cancelled.is_empty() {
        tx.run(
            include_str!("sql/hand_back_cancelled.sql"),
            &[&now, &cancelled],
        )
        .await?;
    }
    // Whether each goes back ready or waiting depends on its batch's gate: hold it still.
    let mut gates: Vec<BatchId> = running
        .iter()
        .filter(|task| back.contains(&task.id))
        .map(|task| task.batch)
        .collect();
    gates.sort_unstable();
    gates.dedup();
    for &batch in &gates {
        gate::lock(tx, batch).await?;
    }
    tx.run(include_str!("sql/hand_back.sql"), &[&back]).await?;
    back.extend(&cancelled);
    let (_, tenant_held, closed) = tokio::try_join!(
        drop_leases(tx, &back),
        freed.write(tx, now),
        gate::close(tx, &closed)
    )?;
    result.tenant_held = tenant_held;
    let ends: Vec<BatchId> = closed.into_iter().filter(|b| hooked.contains(b)).collect();
    result.hooked = hooks::batch_ends(tx, &ends, server, now).await?;
    // In the order handed back, each with all it ends in turn before the next.
    for &id in &cancelled {
        graph::settle(tx, vec![(id, false)], now, server, &mut result).await?;
    }
    Ok(result)
}

/// Whether `task`'s batch halts on failure and has halted: a task of it failed for good
/// (state 4).
async fn halted(tx: &impl GenericClient, task: &Running) -> StoreResult<bool> {
    if !task.halts {
        return Ok(false);
    }
    Ok(tx
        .row(
            "SELECT EXISTS (SELECT 1 FROM tasks WHERE batch_id = $1 AND state = 4)",
            &[&task.batch],
        )
        .await?
        .get::<_, bool>(0))
}
