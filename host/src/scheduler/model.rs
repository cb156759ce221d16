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

use std::cmp::Reverse;
use std::collections::BTreeMap;

use crate::store::{BatchId, CancelResult, FailurePolicy, Micros, TaskId, TaskState};

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
    /// Claims counted so far (a hand-back uncounts its claim).
    pub attempts: u32,
    pub max_attempts: u32,
    /// Its cancellation was asked for while it was claimed: it will not be retried.
    pub cancel_requested: bool,
    /// Claimed and started on its node's slot: `running`; claimed and not started:
    /// `reserved`.
    pub started: bool,
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
        && task.not_before <= now
}

/// The tasks a claim of `k` at `now` takes, in the order it takes them.
///
/// Candidates are the pending tasks at their batch's gate that are due, in claim order:
/// priority descending, then `vseq`, then id. Each is taken if its group (limit from
/// `group_limits`, [`DEFAULT_GROUP_LIMIT`] when absent) and its batch (`batch_limits`:
/// the batches with a `max_parallel`) have fewer claimed tasks than their limit, counting
/// those this claim took; a candidate that does not fit is passed over, and the claim
/// stops once it has `k`.
pub fn claim_order(
    tasks: &[Task],
    group_limits: &BTreeMap<String, u32>,
    batch_limits: &BTreeMap<BatchId, u32>,
    now: Micros,
    k: usize,
) -> Vec<TaskId> {
    let mut group_claimed: BTreeMap<&str, u32> = BTreeMap::new();
    let mut batch_claimed: BTreeMap<BatchId, u32> = BTreeMap::new();
    for task in tasks.iter().filter(|t| t.phase == Phase::Claimed) {
        if let Some(group) = &task.group {
            *group_claimed.entry(group).or_default() += 1;
        }
        *batch_claimed.entry(task.batch).or_default() += 1;
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
        }
        if let Some(&limit) = batch_limits.get(&task.batch)
            && batch_claimed.get(&task.batch).copied().unwrap_or(0) >= limit
        {
            continue;
        }
        if let Some(group) = &task.group {
            *group_claimed.entry(group).or_default() += 1;
        }
        *batch_claimed.entry(task.batch).or_default() += 1;
        taken.push(task.id);
    }
    taken
}

/// The state a store reports for `task`, given every batch's gate.
fn state_at(task: &Task, gates: &BTreeMap<BatchId, i64>) -> TaskState {
    match task.phase {
        Phase::Pending if gates.get(&task.batch) == Some(&task.order) => TaskState::Ready,
        Phase::Pending => TaskState::Waiting,
        Phase::Claimed if task.started => TaskState::Running,
        Phase::Claimed => TaskState::Reserved,
        Phase::Succeeded => TaskState::Succeeded,
        Phase::Failed => TaskState::Failed,
        Phase::Cancelled => TaskState::Cancelled,
    }
}

/// A batch as the scheduler sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// The priority of tasks submitted later without one of their own.
    pub priority: i32,
    pub max_parallel: Option<u32>,
    pub failure_policy: FailurePolicy,
    /// The `vseq` its next submitted task would get, unless the clock is ahead of it.
    pub next_vseq: i64,
    /// The highest order that has had a task claimed: no lower order may be submitted.
    /// A hand-back does not lower it (the task may have begun running).
    pub started_order: Option<i64>,
}

/// A task to submit, as the model needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTask {
    pub order: i64,
    pub group: Option<String>,
    /// `None`: the batch's priority.
    pub priority: Option<i32>,
    pub max_attempts: u32,
    /// `None`: due at once.
    pub not_before: Option<Micros>,
}

/// How an attempt ended, as its node reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Success,
    /// Any failure the task may be retried after (an error, a trap, a timeout).
    Failure,
    /// The node stopped it because its cancellation was asked for.
    Stopped,
}

/// What a claim returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimOutcome {
    /// The tasks taken, in claim order, with the attempt each starts.
    pub tasks: Vec<(TaskId, u32)>,
    /// When the claim took fewer than it could: the earliest time a ready task not yet
    /// due becomes due, if any is.
    pub next_due: Option<Micros>,
}

/// Why a submission was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    NoSuchBatch,
    /// A task's order is lower than one already started in the batch.
    BelowStarted {
        order: i64,
        started: i64,
    },
}

/// A whole store's scheduling state, changed by the same operations as a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    /// Every task, in id order.
    pub tasks: Vec<Task>,
    pub batches: BTreeMap<BatchId, Batch>,
    /// Every group the store knows (named by a submitted task or given a limit), with
    /// its limit.
    pub groups: BTreeMap<String, u32>,
    /// The fair-queueing clock: the largest `vseq` a claim has taken.
    pub vtime: i64,
    next_task: TaskId,
    next_batch: BatchId,
}

impl Default for Model {
    fn default() -> Self {
        Model::new()
    }
}

impl Model {
    /// An empty store: ids start at 1, as a fresh database numbers them.
    pub fn new() -> Self {
        Model {
            tasks: Vec::new(),
            batches: BTreeMap::new(),
            groups: BTreeMap::new(),
            vtime: 0,
            next_task: 1,
            next_batch: 1,
        }
    }

    pub fn task(&self, id: TaskId) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    fn task_mut(&mut self, id: TaskId) -> Option<&mut Task> {
        self.tasks.iter_mut().find(|t| t.id == id)
    }

    /// The state a store reports for a task.
    pub fn state(&self, id: TaskId) -> Option<TaskState> {
        let task = self.task(id)?;
        Some(state_at(task, &gates(&self.tasks)))
    }

    /// The state a store reports for each task, in id order.
    pub fn states(&self) -> Vec<(TaskId, TaskState)> {
        let gates = gates(&self.tasks);
        self.tasks
            .iter()
            .map(|task| (task.id, state_at(task, &gates)))
            .collect()
    }

    /// How many of the group's tasks are claimed now.
    pub fn group_claimed(&self, key: &str) -> u64 {
        self.tasks
            .iter()
            .filter(|t| t.phase == Phase::Claimed && t.group.as_deref() == Some(key))
            .count() as u64
    }

    /// How many of the group's tasks are pending.
    pub fn group_pending(&self, key: &str) -> u64 {
        self.tasks
            .iter()
            .filter(|t| t.phase == Phase::Pending && t.group.as_deref() == Some(key))
            .count() as u64
    }

    pub fn open_batch(
        &mut self,
        priority: i32,
        max_parallel: Option<u32>,
        failure_policy: FailurePolicy,
    ) -> BatchId {
        let id = self.next_batch;
        self.next_batch += 1;
        self.batches.insert(
            id,
            Batch {
                priority,
                max_parallel,
                failure_policy,
                next_vseq: 0,
                started_order: None,
            },
        );
        id
    }

    /// Submits tasks, all or none. The first task's `vseq` is the batch's next one or the
    /// fair-queueing clock, whichever is later, so that a batch that was idle does not
    /// jump ahead of those that kept running; then one more per task.
    pub fn submit(&mut self, batch: BatchId, new: &[NewTask]) -> Result<Vec<TaskId>, Refused> {
        let vtime = self.vtime;
        let b = self.batches.get_mut(&batch).ok_or(Refused::NoSuchBatch)?;
        if let Some(started) = b.started_order
            && let Some(low) = new.iter().find(|t| t.order < started)
        {
            return Err(Refused::BelowStarted {
                order: low.order,
                started,
            });
        }
        let first_vseq = b.next_vseq.max(vtime);
        b.next_vseq = first_vseq + new.len() as i64;
        let batch_priority = b.priority;
        let mut ids = Vec::new();
        for (index, spec) in new.iter().enumerate() {
            let id = self.next_task;
            self.next_task += 1;
            if let Some(group) = &spec.group {
                self.groups
                    .entry(group.clone())
                    .or_insert(DEFAULT_GROUP_LIMIT);
            }
            self.tasks.push(Task {
                id,
                batch,
                order: spec.order,
                group: spec.group.clone(),
                priority: spec.priority.unwrap_or(batch_priority),
                vseq: first_vseq + index as i64,
                not_before: spec.not_before.unwrap_or(0),
                phase: Phase::Pending,
                attempts: 0,
                max_attempts: spec.max_attempts,
                cancel_requested: false,
                started: false,
            });
            ids.push(id);
        }
        Ok(ids)
    }

    /// Claims up to `k` tasks at `now` (see [`claim_order`]).
    pub fn claim(&mut self, now: Micros, k: usize) -> ClaimOutcome {
        let batch_limits: BTreeMap<BatchId, u32> = self
            .batches
            .iter()
            .filter_map(|(&id, b)| Some((id, b.max_parallel?)))
            .collect();
        let taken = claim_order(&self.tasks, &self.groups, &batch_limits, now, k);
        let mut tasks = Vec::new();
        for &id in &taken {
            let task = self.task_mut(id).expect("a claimed task exists");
            task.phase = Phase::Claimed;
            task.started = false;
            task.attempts += 1;
            let (attempt, batch, order, vseq) = (task.attempts, task.batch, task.order, task.vseq);
            tasks.push((id, attempt));
            let b = self.batches.get_mut(&batch).expect("a task's batch exists");
            b.started_order = Some(b.started_order.map_or(order, |o| o.max(order)));
            self.vtime = self.vtime.max(vseq);
        }
        let next_due = if taken.len() < k {
            let gates = gates(&self.tasks);
            self.tasks
                .iter()
                .filter(|t| t.phase == Phase::Pending && gates.get(&t.batch) == Some(&t.order))
                .map(|t| t.not_before)
                .filter(|&at| at > now)
                .min()
        } else {
            None
        };
        ClaimOutcome { tasks, next_due }
    }

    /// Records how a claimed task's attempt ended at `now`; returns the state it is in
    /// after, or `None` when it was not claimed (the store ignores such a completion).
    pub fn complete(&mut self, id: TaskId, ending: Ending, now: Micros) -> Option<Phase> {
        let batch = self.task(id)?.batch;
        // A halting batch with a task failed for good retries nothing more.
        let halted = self.batches[&batch].failure_policy == FailurePolicy::Halt
            && self
                .tasks
                .iter()
                .any(|t| t.batch == batch && t.phase == Phase::Failed);
        let task = self.task_mut(id).filter(|t| t.phase == Phase::Claimed)?;
        let phase = match ending {
            Ending::Success => Phase::Succeeded,
            Ending::Stopped => Phase::Cancelled,
            Ending::Failure if task.cancel_requested => Phase::Cancelled,
            Ending::Failure if task.attempts < task.max_attempts && halted => Phase::Cancelled,
            Ending::Failure if task.attempts < task.max_attempts => {
                task.not_before = now;
                Phase::Pending
            }
            Ending::Failure => Phase::Failed,
        };
        task.phase = phase;
        let batch = task.batch;
        if phase == Phase::Failed && self.batches[&batch].failure_policy == FailurePolicy::Halt {
            self.cancel_pending(batch);
        }
        Some(phase)
    }

    /// Marks a claimed task started on its node's slot.
    pub fn start(&mut self, id: TaskId) {
        if let Some(task) = self.task_mut(id).filter(|t| t.phase == Phase::Claimed) {
            task.started = true;
        }
    }

    /// Puts a claimed task back as it was before its claim, the attempt not counted; one
    /// whose cancellation was asked ends cancelled instead. Returns the phase it is in
    /// after, or `None` when it was not claimed.
    pub fn release(&mut self, id: TaskId) -> Option<Phase> {
        let task = self.task_mut(id).filter(|t| t.phase == Phase::Claimed)?;
        task.attempts -= 1;
        task.started = false;
        task.phase = if task.cancel_requested {
            Phase::Cancelled
        } else {
            Phase::Pending
        };
        Some(task.phase)
    }

    /// Cancels a pending task; asks for a claimed one to be stopped.
    pub fn cancel(&mut self, id: TaskId) -> Option<CancelResult> {
        let task = self.task_mut(id)?;
        Some(match task.phase {
            Phase::Pending => {
                task.phase = Phase::Cancelled;
                CancelResult::Cancelled
            }
            Phase::Claimed => {
                task.cancel_requested = true;
                CancelResult::Requested
            }
            _ => CancelResult::AlreadyEnded,
        })
    }

    /// Cancels the batch's pending tasks and asks for its claimed ones to be stopped;
    /// returns how many were cancelled.
    pub fn cancel_batch(&mut self, batch: BatchId) -> u64 {
        for task in self.tasks.iter_mut() {
            if task.batch == batch && task.phase == Phase::Claimed {
                task.cancel_requested = true;
            }
        }
        self.cancel_pending(batch)
    }

    fn cancel_pending(&mut self, batch: BatchId) -> u64 {
        let mut cancelled = 0;
        for task in self.tasks.iter_mut() {
            if task.batch == batch && task.phase == Phase::Pending {
                task.phase = Phase::Cancelled;
                cancelled += 1;
            }
        }
        cancelled
    }

    /// Changes the priority of a task that has not started (pending, or claimed and not
    /// started: its node hands it back); `false` (nothing changes) for any other.
    pub fn set_task_priority(&mut self, id: TaskId, priority: i32) -> bool {
        match self.task_mut(id).filter(|t| not_started(t)) {
            Some(task) => {
                task.priority = priority;
                true
            }
            None => false,
        }
    }

    /// Changes the batch's priority, for its tasks that have not started and those
    /// submitted later; started ones keep theirs. Returns how many tasks changed.
    pub fn set_batch_priority(&mut self, batch: BatchId, priority: i32) -> u64 {
        if let Some(b) = self.batches.get_mut(&batch) {
            b.priority = priority;
        }
        let mut changed = 0;
        for task in self.tasks.iter_mut() {
            if task.batch == batch && not_started(task) {
                task.priority = priority;
                changed += 1;
            }
        }
        changed
    }

    pub fn set_group_limit(&mut self, key: &str, limit: u32) {
        self.groups.insert(key.to_owned(), limit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Micros = 1_000;

    fn new_task(order: i64, group: Option<&str>) -> NewTask {
        NewTask {
            order,
            group: group.map(str::to_owned),
            priority: None,
            max_attempts: 1,
            not_before: None,
        }
    }

    fn ids(outcome: ClaimOutcome) -> Vec<TaskId> {
        outcome.tasks.into_iter().map(|(id, _)| id).collect()
    }

    #[test]
    fn a_gate_holds_back_higher_orders_until_lower_ones_end() {
        let mut m = Model::new();
        let b = m.open_batch(0, None, FailurePolicy::Continue);
        let t = m
            .submit(
                b,
                &[new_task(0, None), new_task(1, None), new_task(0, None)],
            )
            .unwrap();
        assert_eq!(m.state(t[1]), Some(TaskState::Waiting));
        assert_eq!(ids(m.claim(NOW, 10)), [t[0], t[2]]);
        m.complete(t[0], Ending::Success, NOW);
        assert!(m.claim(NOW, 10).tasks.is_empty());
        m.complete(t[2], Ending::Success, NOW);
        assert_eq!(m.state(t[1]), Some(TaskState::Ready));
        assert_eq!(ids(m.claim(NOW, 10)), [t[1]]);
    }

    #[test]
    fn a_lower_order_moves_the_gate_down_until_one_above_it_started() {
        let mut m = Model::new();
        let b = m.open_batch(0, None, FailurePolicy::Continue);
        let high = m.submit(b, &[new_task(2, None)]).unwrap();
        let low = m.submit(b, &[new_task(1, None)]).unwrap();
        assert_eq!(m.state(high[0]), Some(TaskState::Waiting));
        assert_eq!(ids(m.claim(NOW, 10)), low);
        assert_eq!(
            m.submit(b, &[new_task(0, None)]),
            Err(Refused::BelowStarted {
                order: 0,
                started: 1
            })
        );
        // Handed back, the order still counts as started.
        m.release(low[0]);
        assert!(m.submit(b, &[new_task(0, None)]).is_err());
        assert!(m.submit(b, &[new_task(1, None)]).is_ok());
    }

    #[test]
    fn a_group_gives_one_task_per_claim_by_default_and_more_with_a_higher_limit() {
        let mut m = Model::new();
        let b = m.open_batch(0, None, FailurePolicy::Continue);
        let t = m
            .submit(b, &[new_task(0, Some("g")), new_task(0, Some("g"))])
            .unwrap();
        assert_eq!(ids(m.claim(NOW, 10)), [t[0]]);
        assert!(m.claim(NOW, 10).tasks.is_empty());
        m.set_group_limit("g", 2);
        assert_eq!(ids(m.claim(NOW, 10)), [t[1]]);
    }

    #[test]
    fn a_full_group_does_not_block_the_tasks_behind_it() {
        let mut m = Model::new();
        let b = m.open_batch(0, None, FailurePolicy::Continue);
        let t = m
            .submit(
                b,
                &[
                    new_task(0, Some("g")),
                    new_task(0, Some("g")),
                    new_task(0, Some("g")),
                    new_task(0, None),
                    new_task(0, Some("h")),
                ],
            )
            .unwrap();
        assert_eq!(ids(m.claim(NOW, 3)), [t[0], t[3], t[4]]);
    }

    #[test]
    fn a_batch_limit_bounds_its_batch_only() {
        let mut m = Model::new();
        let limited = m.open_batch(1, Some(2), FailurePolicy::Continue);
        let free = m.open_batch(0, None, FailurePolicy::Continue);
        let l = m.submit(limited, &vec![new_task(0, None); 5]).unwrap();
        let f = m.submit(free, &[new_task(0, None)]).unwrap();
        assert_eq!(ids(m.claim(NOW, 4)), [l[0], l[1], f[0]]);
        m.complete(l[0], Ending::Success, NOW);
        assert_eq!(ids(m.claim(NOW, 4)), [l[2]]);
    }

    #[test]
    fn priority_goes_first_and_changes_only_tasks_not_started() {
        let mut m = Model::new();
        let b = m.open_batch(0, None, FailurePolicy::Continue);
        let t = m
            .submit(
                b,
                &[
                    new_task(0, None),
                    NewTask {
                        priority: Some(5),
                        ..new_task(0, None)
                    },
                    new_task(0, None),
                ],
            )
            .unwrap();
        assert_eq!(ids(m.claim(NOW, 1)), [t[1]]);
        assert!(m.set_task_priority(t[2], 9));
        m.start(t[1]);
        assert!(
            !m.set_task_priority(t[1], 0),
            "a started task keeps its priority"
        );
        assert_eq!(m.set_batch_priority(b, 3), 2);
        assert_eq!(m.task(t[1]).unwrap().priority, 5);
        // The batch's priority moved both pending tasks to 3: first in, first out again.
        assert_eq!(ids(m.claim(NOW, 2)), [t[0], t[2]]);
    }

    #[test]
    fn a_later_small_batch_is_not_starved_by_a_large_one() {
        let mut m = Model::new();
        let large = m.open_batch(0, None, FailurePolicy::Continue);
        let l = m.submit(large, &vec![new_task(0, None); 10]).unwrap();
        assert_eq!(ids(m.claim(NOW, 2)), [l[0], l[1]]);
        // The clock is at vseq 1: the small batch starts there, beside the large one's 2.
        let small = m.open_batch(0, None, FailurePolicy::Continue);
        let s = m.submit(small, &vec![new_task(0, None); 2]).unwrap();
        assert_eq!(m.task(s[0]).unwrap().vseq, 1);
        assert_eq!(ids(m.claim(NOW, 4)), [s[0], l[2], s[1], l[3]]);
    }

    #[test]
    fn failures_are_retried_then_fail_and_a_halting_batch_cancels_the_rest() {
        let mut m = Model::new();
        let b = m.open_batch(0, None, FailurePolicy::Halt);
        let t = m
            .submit(
                b,
                &[
                    NewTask {
                        max_attempts: 2,
                        ..new_task(0, None)
                    },
                    new_task(1, None),
                ],
            )
            .unwrap();
        assert_eq!(m.claim(NOW, 1).tasks, [(t[0], 1)]);
        assert_eq!(m.complete(t[0], Ending::Failure, NOW), Some(Phase::Pending));
        assert_eq!(m.claim(NOW, 1).tasks, [(t[0], 2)]);
        assert_eq!(m.complete(t[0], Ending::Failure, NOW), Some(Phase::Failed));
        assert_eq!(m.state(t[1]), Some(TaskState::Cancelled));
    }

    #[test]
    fn a_cancelled_claimed_task_ends_when_its_attempt_does_and_is_not_retried() {
        let mut m = Model::new();
        let b = m.open_batch(0, None, FailurePolicy::Continue);
        let t = m
            .submit(
                b,
                &[
                    NewTask {
                        max_attempts: 3,
                        ..new_task(0, None)
                    },
                    new_task(0, None),
                ],
            )
            .unwrap();
        m.claim(NOW, 1);
        assert_eq!(m.cancel(t[0]), Some(CancelResult::Requested));
        assert_eq!(m.cancel(t[1]), Some(CancelResult::Cancelled));
        assert_eq!(m.state(t[0]), Some(TaskState::Reserved));
        assert_eq!(
            m.complete(t[0], Ending::Failure, NOW),
            Some(Phase::Cancelled)
        );
    }

    #[test]
    fn a_task_not_yet_due_is_passed_over_and_reported_as_next_due() {
        let mut m = Model::new();
        let b = m.open_batch(0, None, FailurePolicy::Continue);
        let t = m
            .submit(
                b,
                &[
                    NewTask {
                        not_before: Some(NOW + 50),
                        ..new_task(0, None)
                    },
                    new_task(0, None),
                ],
            )
            .unwrap();
        let outcome = m.claim(NOW, 5);
        assert_eq!(outcome.tasks, [(t[1], 1)]);
        assert_eq!(outcome.next_due, Some(NOW + 50));
        assert_eq!(ids(m.claim(NOW + 50, 5)), [t[0]]);
    }
}
