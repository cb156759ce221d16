//! An executable model of the claim: the scheduling rules every store driver enforces,
//! written as plain loops over plain collections, so that tests can run a driver and the
//! model side by side and compare each claim exactly.
//!
//! [`claim_order`] is the core: from every task, the group and batch limits and the clock,
//! the tasks a claim of `k` takes, in the order it takes them. [`Model`] keeps what a store
//! keeps for scheduling (batches, tasks, group limits, the fair-queueing clock) and applies
//! the same operations as [`crate::store::Store`], one at a time. Nothing here is fast:
//! it only has to be obviously right.
//!
//! Retries are due at once: the model knows no backoff (a real one has random jitter), so
//! its users submit tasks with a zero backoff.
//!
//! Beside the claim: pauses and limits changed after the fact (`pause.rs`: a pause is a
//! limit of 0, as in the stores), group rates as token buckets (`rate.rs`), bulk actions
//! with re-drive (`redrive.rs`), dependency edges with their failure policies
//! (`graph.rs`; fan-ins, `after: "*"`, are left to the conformance tests), children
//! submitted by claimed tasks and suspensions (`spawn.rs`), and deferred attempts with
//! the holds they put on their groups (`defer.rs`), tenants' budgets with the holds
//! their windows put on them (`budget.rs`), and the weighted fair share that divides each
//! claim among tenants (`fair.rs`).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use crate::runtime::Outcome;
use crate::store::{BatchId, Micros, OnFailure, TaskId, TaskState, TenantId};

mod budget;
mod defer;
mod fair;
mod graph;
mod pause;
mod rate;
mod redrive;
mod spawn;
mod store;
#[cfg(test)]
mod tests;

pub use fair::Share;
pub use rate::Rate;
pub use spawn::SpawnRefused;
pub use store::{Batch, ClaimOutcome, Ending, Model, NewDep, NewTask, Refused};

/// Where a task is in its life. Waiting and ready are one phase here: a pending task is
/// ready exactly when its order is its batch's gate (see [`gates`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Pending,
    Claimed,
    Succeeded,
    Failed,
    Cancelled,
}

impl Phase {
    pub fn is_ended(self) -> bool {
        matches!(self, Phase::Succeeded | Phase::Failed | Phase::Cancelled)
    }
}

/// A task, with what the claim looks at and what its completion needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub id: TaskId,
    pub batch: BatchId,
    pub order: i64,
    pub group: Option<String>,
    pub priority: i32,
    /// Its place in start-time fair queueing: lower goes first among equal priorities.
    pub vseq: i64,
    /// Not claimable before this time.
    pub not_before: Micros,
    pub phase: Phase,
    /// Claims counted so far (a hand-back uncounts its claim), over the task's whole life.
    pub attempts: u32,
    pub max_attempts: u32,
    /// The attempts it had made when it was last re-driven: its `max_attempts` count from
    /// there.
    pub redriven_after: u32,
    /// The times it was deferred: attempts it made that its `max_attempts` do not count.
    pub deferrals: u32,
    /// How its last attempt ended, or how it ended (cancelled before running); `None`
    /// before either.
    pub outcome: Option<Outcome>,
    /// Its cancellation was asked for while it was claimed: it will not be retried.
    pub cancel_requested: bool,
    /// Claimed and started on its node's slot: `running`; claimed and not started:
    /// `reserved`.
    pub started: bool,
    /// When it was last claimed: its attempt holds its slot from then to its end (a start
    /// mark's time is not modeled).
    pub claimed_at: Micros,
    /// The tasks it runs after, each with what its failure does to this one.
    pub after: Vec<(TaskId, OnFailure)>,
    /// Those of them it waits for: not ended since it was submitted or re-driven, or run
    /// again since (see `graph.rs`). It is claimable only when none is left.
    pub waits: BTreeSet<TaskId>,
    /// Tokens it spends of its group's rate (`rate.rs`).
    pub cost: i64,
}

/// Pending, or claimed and not yet started: a change of priority still reaches it.
fn not_started(task: &Task) -> bool {
    task.phase == Phase::Pending || (task.phase == Phase::Claimed && !task.started)
}

/// The default limit of a group whose limit was never set.
pub const DEFAULT_GROUP_LIMIT: u32 = 1;

/// Each batch's gate: the lowest order among its tasks that have not ended. A batch with
/// no such task has none.
pub fn gates(tasks: &[Task]) -> BTreeMap<BatchId, i64> {
    let mut gates: BTreeMap<BatchId, i64> = BTreeMap::new();
    for task in tasks {
        if task.phase.is_ended() {
            continue;
        }
        let gate = gates.entry(task.batch).or_insert(task.order);
        if task.order < *gate {
            *gate = task.order;
        }
    }
    gates
}

/// Whether a claim at `now` may take `task` if its group and batch have room: it is
/// pending, at its batch's gate, and due.
pub fn is_due_at_gate(task: &Task, gates: &BTreeMap<BatchId, i64>, now: Micros) -> bool {
    task.phase == Phase::Pending
        && gates.get(&task.batch) == Some(&task.order)
        && task.waits.is_empty()
        && task.not_before <= now
}

/// The tasks a claim of `k` at `now` takes, in the order it takes them.
///
/// Candidates are the pending tasks at their batch's gate that are due, in claim order:
/// priority descending, then `vseq`, then id. Each is taken if its group (limit from
/// `group_limits`, [`DEFAULT_GROUP_LIMIT`] when absent) and its batch (`batch_limits`:
/// the batches with a `max_parallel`) have fewer claimed tasks than their limit, counting
/// those this claim took, and its group's rate (`group_tokens`: the groups with a rate
/// and their tokens now) has more tokens than this claim's tasks of the group cost; a
/// candidate
/// that does not fit is passed over, and the claim stops once it has `k`. A task whose
/// batch is in `batch_tenants` (the batches of tenants with a running limit, or held by
/// their budget with a limit of 0, with their tenant and its limit) needs as well its
/// tenant to have fewer claimed tasks, across all its batches, than its limit.
pub fn claim_order(
    tasks: &[Task],
    group_limits: &BTreeMap<String, u32>,
    group_tokens: &BTreeMap<String, i64>,
    batch_limits: &BTreeMap<BatchId, u32>,
    batch_tenants: &BTreeMap<BatchId, (TenantId, u32)>,
    now: Micros,
    k: usize,
) -> Vec<TaskId> {
    let mut group_taken: BTreeMap<&str, i64> = BTreeMap::new();
    let mut group_claimed: BTreeMap<&str, u32> = BTreeMap::new();
    let mut batch_claimed: BTreeMap<BatchId, u32> = BTreeMap::new();
    let mut tenant_claimed: BTreeMap<TenantId, u32> = BTreeMap::new();
    for task in tasks.iter().filter(|t| t.phase == Phase::Claimed) {
        if let Some(group) = &task.group {
            *group_claimed.entry(group).or_default() += 1;
        }
        *batch_claimed.entry(task.batch).or_default() += 1;
        if let Some(&(tenant, _)) = batch_tenants.get(&task.batch) {
            *tenant_claimed.entry(tenant).or_default() += 1;
        }
    }

    let gates = gates(tasks);
    let mut candidates: Vec<&Task> = tasks
        .iter()
        .filter(|t| is_due_at_gate(t, &gates, now))
        .collect();
    candidates.sort_by_key(|t| (Reverse(t.priority), t.vseq, t.id));

    let mut taken = Vec::new();
    for task in candidates {
        if taken.len() == k {
            break;
        }
        if let Some(group) = &task.group {
            let limit = group_limits
                .get(group)
                .copied()
                .unwrap_or(DEFAULT_GROUP_LIMIT);
            if group_claimed.get(group.as_str()).copied().unwrap_or(0) >= limit {
                continue;
            }
            if let Some(&tokens) = group_tokens.get(group)
                && group_taken.get(group.as_str()).copied().unwrap_or(0) >= tokens
            {
                continue;
            }
        }
        if let Some(&limit) = batch_limits.get(&task.batch)
            && batch_claimed.get(&task.batch).copied().unwrap_or(0) >= limit
        {
            continue;
        }
        let tenant = batch_tenants.get(&task.batch);
        if let Some(&(tenant, limit)) = tenant
            && tenant_claimed.get(&tenant).copied().unwrap_or(0) >= limit
        {
            continue;
        }
        if let Some(&(tenant, _)) = tenant {
            *tenant_claimed.entry(tenant).or_default() += 1;
        }
        if let Some(group) = &task.group {
            *group_claimed.entry(group).or_default() += 1;
            *group_taken.entry(group).or_default() += task.cost;
        }
        *batch_claimed.entry(task.batch).or_default() += 1;
        taken.push(task.id);
    }
    taken
}

/// The state a store reports for `task`, given every batch's gate and whether its batch or
/// group holds it (a limit of 0).
fn state_at(task: &Task, gates: &BTreeMap<BatchId, i64>, held: bool) -> TaskState {
    match task.phase {
        Phase::Pending if !task.waits.is_empty() => TaskState::Waiting,
        Phase::Pending if gates.get(&task.batch) == Some(&task.order) && held => TaskState::Held,
        Phase::Pending if gates.get(&task.batch) == Some(&task.order) => TaskState::Ready,
        Phase::Pending => TaskState::Waiting,
        Phase::Claimed if task.started => TaskState::Running,
        Phase::Claimed => TaskState::Reserved,
        Phase::Succeeded => TaskState::Succeeded,
        Phase::Failed => TaskState::Failed,
        Phase::Cancelled => TaskState::Cancelled,
    }
}
