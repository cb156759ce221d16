//! [`Model`]: a whole store's scheduling state, and the store's operations on it, one at a
//! time, by the rules in [`super`].

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::store::{CancelResult, FailurePolicy};

/// A batch as the scheduler sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// The priority of tasks submitted later without one of their own.
    pub priority: i32,
    /// Its limit; while paused, the one it gets back on resume.
    pub max_parallel: Option<u32>,
    /// Paused: none of its tasks is claimed (as if its `max_parallel` were 0).
    pub paused: bool,
    pub failure_policy: FailurePolicy,
    /// The `vseq` its next submitted task would get, unless the clock is ahead of it.
    pub next_vseq: i64,
    /// The highest order that has had a task claimed: no lower order may be submitted.
    /// A hand-back does not lower it (the task may have begun running).
    pub started_order: Option<i64>,
    /// The tenant it belongs to; none: the admin's.
    pub tenant: Option<TenantId>,
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
    /// The tasks it runs after, each with what its failure does to it.
    pub after: Vec<(NewDep, OnFailure)>,
    /// Tokens it spends of its group's rate.
    pub cost: u32,
}

/// A task a new task runs after: an earlier one of the same submission, by its index, or
/// a stored one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewDep {
    Earlier(usize),
    Stored(TaskId),
}

/// How an attempt ended, as its node reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Success,
    /// A failure the task may be retried after: the task returned an error (`guest-error`;
    /// a trap or a timeout is alike but for its name).
    Failure,
    /// Its lease was lost (`lost`): retried as a failure is.
    Lost,
    /// The node stopped it because its cancellation was asked for.
    Stopped,
    /// It suspended (`suspended`) to wait for its children: pending again, the attempt
    /// given back, unless its cancellation was asked for.
    Suspended,
    /// The task asked to run again at `until` (`deferred`), allowed `most` deferrals.
    Deferred {
        until: Micros,
        most: u32,
    },
}

impl Ending {
    /// The outcome a store records for it.
    pub fn outcome(self) -> Outcome {
        match self {
            Ending::Success => Outcome::Succeeded,
            Ending::Failure => Outcome::GuestError,
            Ending::Lost => Outcome::Lost,
            Ending::Stopped => Outcome::Cancelled,
            Ending::Suspended => Outcome::Suspended,
            Ending::Deferred { .. } => Outcome::Deferred,
        }
    }
}

/// What a claim returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimOutcome {
    /// The tasks taken, in claim order, with the attempt each starts.
    pub tasks: Vec<(TaskId, u32)>,
    /// What its tenant's budget left each task taken, for tasks of tenants with one.
    pub budget_left: BTreeMap<TaskId, crate::store::Left>,
    /// When the claim took fewer than it could: the earliest time a ready task not yet
    /// due becomes due, a group with a rate holding tasks back gets a token, or a held
    /// group or tenant is let go, if any is.
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
    /// A task runs after one that does not exist, or is of another batch.
    UnknownDep {
        index: usize,
    },
    /// A task runs after one of a higher order: a cycle through the gate.
    DepAbove {
        index: usize,
    },
    /// The tasks would pass their tenant's open limit.
    TenantFull {
        tenant: TenantId,
        open: u64,
        adds: u64,
    },
}

/// A whole store's scheduling state, changed by the same operations as a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    /// Every task, in id order.
    pub tasks: Vec<Task>,
    pub batches: BTreeMap<BatchId, Batch>,
    /// Every group the store knows (named by a submitted task, given a limit or paused),
    /// with its limit (while paused, the one it gets back on resume).
    pub groups: BTreeMap<String, u32>,
    /// The groups paused: none of their tasks is claimed (as if their limit were 0).
    pub paused_groups: BTreeSet<String>,
    /// The groups with a rate, and their buckets.
    pub rates: BTreeMap<String, super::Rate>,
    /// The groups a deferral held, until when (past: let go).
    pub holds: BTreeMap<String, Micros>,
    /// The tenants that were given a CPU budget, with their windows (`budget.rs`).
    pub budgets: BTreeMap<TenantId, crate::store::Window>,
    /// The tenants their budget held, until when (past or 0: let go).
    pub tenant_holds: BTreeMap<TenantId, Micros>,
    /// The fair-queueing clock: the largest `vseq` a claim has taken.
    pub vtime: i64,
    /// The tenants with a running limit, and their limit.
    pub tenant_limits: BTreeMap<TenantId, u32>,
    /// The tenants with an open limit, and their limit.
    pub tenant_max_open: BTreeMap<TenantId, u32>,
    /// What the fair share keeps of each tenant that ran or was given a weight (`fair.rs`).
    pub shares: BTreeMap<TenantId, super::fair::Share>,
    /// The fair share's clock: the highest standing a claim served.
    pub fair_clock: i64,
    /// The children claimed tasks submitted, by parent and key.
    pub children: BTreeMap<(TaskId, String), TaskId>,
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
            paused_groups: BTreeSet::new(),
            rates: BTreeMap::new(),
            holds: BTreeMap::new(),
            budgets: BTreeMap::new(),
            tenant_holds: BTreeMap::new(),
            vtime: 0,
            tenant_limits: BTreeMap::new(),
            tenant_max_open: BTreeMap::new(),
            shares: BTreeMap::new(),
            fair_clock: 0,
            children: BTreeMap::new(),
            next_task: 1,
            next_batch: 1,
        }
    }

    pub fn task(&self, id: TaskId) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    pub(super) fn task_mut(&mut self, id: TaskId) -> Option<&mut Task> {
        self.tasks.iter_mut().find(|t| t.id == id)
    }

    /// The state a store reports for a task.
    pub fn state(&self, id: TaskId) -> Option<TaskState> {
        let task = self.task(id)?;
        Some(state_at(task, &gates(&self.tasks), self.holds(task)))
    }

    /// The state a store reports for each task, in id order.
    pub fn states(&self) -> Vec<(TaskId, TaskState)> {
        let gates = gates(&self.tasks);
        self.tasks
            .iter()
            .map(|task| (task.id, state_at(task, &gates, self.holds(task))))
            .collect()
    }

    /// The limits the claim applies: a paused batch or group has a limit of 0.
    pub(super) fn limits(&self) -> (BTreeMap<String, u32>, BTreeMap<BatchId, u32>) {
        let groups = self
            .groups
            .iter()
            .map(|(key, &limit)| {
                let paused = self.paused_groups.contains(key);
                (key.clone(), if paused { 0 } else { limit })
            })
            .collect();
        let batches = self
            .batches
            .iter()
            .filter_map(|(&id, b)| Some((id, if b.paused { 0 } else { b.max_parallel? })))
            .collect();
        (groups, batches)
    }

    /// Whether the task's batch or group holds it: paused, or with a limit of 0.
    fn holds(&self, task: &Task) -> bool {
        let (groups, batches) = self.limits();
        batches.get(&task.batch) == Some(&0)
            || task.group.as_ref().and_then(|g| groups.get(g)) == Some(&0)
    }

    /// The groups with room that have a pending task at its batch's gate waiting on no
    /// other task: those a token back, or a hold's end, lets start one.
    pub(super) fn startable_groups(&self) -> BTreeSet<String> {
        let (limits, _) = self.limits();
        let gates = gates(&self.tasks);
        self.tasks
            .iter()
            .filter(|t| {
                t.phase == Phase::Pending
                    && gates.get(&t.batch) == Some(&t.order)
                    // One waiting for tasks it runs after waits on them, not on its group.
                    && t.waits.is_empty()
            })
            .filter_map(|t| t.group.clone())
            .filter(|key| {
                let limit = limits.get(key).copied().unwrap_or(DEFAULT_GROUP_LIMIT);
                u64::from(limit) > self.group_claimed(key)
            })
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
                paused: false,
                failure_policy,
                next_vseq: 0,
                started_order: None,
                tenant: None,
            },
        );
        id
    }

    /// Makes `batch` one of `tenant`'s.
    pub fn set_batch_tenant(&mut self, batch: BatchId, tenant: TenantId) {
        if let Some(b) = self.batches.get_mut(&batch) {
            b.tenant = Some(tenant);
        }
    }

    /// Sets or lifts `tenant`'s running limit: it reaches every task not yet claimed.
    pub fn set_tenant_limit(&mut self, tenant: TenantId, limit: Option<u32>) {
        match limit {
            Some(limit) => self.tenant_limits.insert(tenant, limit),
            None => self.tenant_limits.remove(&tenant),
        };
    }

    /// Sets or lifts `tenant`'s open limit: it holds for submissions and re-drives from
    /// then on (the tasks open already stay).
    pub fn set_tenant_max_open(&mut self, tenant: TenantId, limit: Option<u32>) {
        match limit {
            Some(limit) => self.tenant_max_open.insert(tenant, limit),
            None => self.tenant_max_open.remove(&tenant),
        };
    }

    /// How many of `tenant`'s tasks are open: submitted, not ended.
    pub fn tenant_open(&self, tenant: TenantId) -> u64 {
        self.tasks
            .iter()
            .filter(|t| !t.phase.is_ended() && self.batches[&t.batch].tenant == Some(tenant))
            .count() as u64
    }

    /// Refuses `adds` more open tasks of each tenant past its open limit.
    pub(super) fn check_open(&self, adds: &BTreeMap<TenantId, u64>) -> Result<(), Refused> {
        for (&tenant, &adds) in adds {
            let Some(&max) = self.tenant_max_open.get(&tenant) else {
                continue;
            };
            let open = self.tenant_open(tenant);
            if open + adds > u64::from(max) {
                return Err(Refused::TenantFull { tenant, open, adds });
            }
        }
        Ok(())
    }

    /// The batches of tenants with a running limit or held at `now`, with their tenant
    /// and its limit (0 while held).
    fn batch_tenants(&self, now: Micros) -> BTreeMap<BatchId, (TenantId, u32)> {
        let held: BTreeSet<TenantId> = self.held_tenants(now).collect();
        self.batches
            .iter()
            .filter_map(|(&id, b)| {
                let tenant = b.tenant?;
                if held.contains(&tenant) {
                    return Some((id, (tenant, 0)));
                }
                Some((id, (tenant, *self.tenant_limits.get(&tenant)?)))
            })
            .collect()
    }

    /// Submits tasks, all or none. The first task's `vseq` is the batch's next one or the
    /// fair-queueing clock, whichever is later, so that a batch that was idle does not
    /// jump ahead of those that kept running; then one more per task.
    pub fn submit(&mut self, batch: BatchId, new: &[NewTask]) -> Result<Vec<TaskId>, Refused> {
        let vtime = self.vtime;
        let b = self.batches.get(&batch).ok_or(Refused::NoSuchBatch)?;
        // As the stores do: the tenant's room first, then the tasks themselves.
        if let Some(tenant) = b.tenant {
            self.check_open(&BTreeMap::from([(tenant, new.len() as u64)]))?;
        }
        if let Some(started) = b.started_order
            && let Some(low) = new.iter().find(|t| t.order < started)
        {
            return Err(Refused::BelowStarted {
                order: low.order,
                started,
            });
        }
        let (first_vseq, batch_priority) = (b.next_vseq.max(vtime), b.priority);
        let deps = self.resolve(batch, new)?;
        let b = self.batches.get_mut(&batch).expect("checked above");
        b.next_vseq = first_vseq + new.len() as i64;
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
                redriven_after: 0,
                deferrals: 0,
                outcome: None,
                cancel_requested: false,
                started: false,
                claimed_at: 0,
                after: Vec::new(),
                waits: BTreeSet::new(),
                cost: i64::from(spec.cost),
            });
            ids.push(id);
        }
        self.add_edges(&ids, deps);
        Ok(ids)
    }

    /// Claims up to `k` tasks at `now` (see [`claim_order`]), divided among tenants by
    /// their fair share (`fair.rs`).
    pub fn claim(&mut self, now: Micros, k: usize) -> ClaimOutcome {
        let taken = self.claim_shared(now, k);
        let mut tasks = Vec::new();
        let mut budget_left = BTreeMap::new();
        for &id in &taken {
            let task = self.task(id).expect("a claimed task exists");
            tasks.push((id, task.attempts));
            let left = self.budget_left(task.batch, now);
            if left != crate::store::Left::default() {
                budget_left.insert(id, left);
            }
        }
        let next_due = if taken.len() < k {
            let gates = gates(&self.tasks);
            self.tasks
                .iter()
                .filter(|t| t.phase == Phase::Pending && gates.get(&t.batch) == Some(&t.order))
                // One waiting for tasks it runs after is due at no set time.
                .filter(|t| t.waits.is_empty())
                .map(|t| t.not_before)
                .filter(|&at| at > now)
                .chain(self.next_token(now))
                .chain(self.next_release(now))
                .chain(self.next_tenant_release(now))
                .min()
        } else {
            None
        };
        ClaimOutcome {
            tasks,
            budget_left,
            next_due,
        }
    }

    /// Takes up to `k` tasks at `now` in claim order, at most `caps` of each tenant's
    /// (a tenant left out: none) when given.
    pub(super) fn claim_round(
        &mut self,
        now: Micros,
        k: usize,
        caps: Option<&BTreeMap<TenantId, i64>>,
    ) -> Vec<TaskId> {
        let (group_limits, batch_limits) = self.limits();
        let mut tokens = self.tokens(now);
        tokens.extend(self.held(now));
        let mut batch_tenants = self.batch_tenants(now);
        if let Some(caps) = caps {
            for (&id, b) in &self.batches {
                let Some(tenant) = b.tenant else { continue };
                let cap = caps.get(&tenant).copied().unwrap_or(0);
                let most = (self.tenant_claimed(tenant) + cap).min(i64::from(u32::MAX)) as u32;
                let limit = batch_tenants.get(&id).map_or(most, |&(_, l)| l.min(most));
                batch_tenants.insert(id, (tenant, limit));
            }
        }
        let taken = claim_order(
            &self.tasks,
            &group_limits,
            &tokens,
            &batch_limits,
            &batch_tenants,
            now,
            k,
        );
        self.spend_tokens(&taken, now);
        for &id in &taken {
            let task = self.task_mut(id).expect("a claimed task exists");
            task.phase = Phase::Claimed;
            task.started = false;
            task.attempts += 1;
            task.claimed_at = now;
            let (batch, order, vseq) = (task.batch, task.order, task.vseq);
            let b = self.batches.get_mut(&batch).expect("a task's batch exists");
            b.started_order = Some(b.started_order.map_or(order, |o| o.max(order)));
            self.vtime = self.vtime.max(vseq);
        }
        taken
    }

    /// Records how a claimed task's attempt ended at `now`; returns the state it is in
    /// after, or `None` when it was not claimed (the store ignores such a completion).
    pub fn complete(&mut self, id: TaskId, ending: Ending, now: Micros) -> Option<Phase> {
        self.complete_using(id, ending, now, crate::store::Spent::default())
    }

    /// [`Model::complete`], for an attempt that used `used` of its tenant's budget.
    pub fn complete_using(
        &mut self,
        id: TaskId,
        ending: Ending,
        now: Micros,
        used: crate::store::Spent,
    ) -> Option<Phase> {
        let batch = self.task(id)?.batch;
        if self.task(id)?.phase == Phase::Claimed {
            self.charge_budget(batch, used, now);
            self.charge_slot(batch, self.task(id)?.claimed_at, now);
        }
        // A halting batch with a task failed for good retries nothing more.
        let halted = self.batches[&batch].failure_policy == FailurePolicy::Halt
            && self
                .tasks
                .iter()
                .any(|t| t.batch == batch && t.phase == Phase::Failed);
        let task = self.task_mut(id).filter(|t| t.phase == Phase::Claimed)?;
        if matches!(ending, Ending::Suspended) && !task.cancel_requested && !halted {
            self.suspend(id);
            return Some(Phase::Pending);
        }
        let attempts_left =
            task.attempts - task.redriven_after < task.max_attempts + task.deferrals;
        // A deferral within its bound is not charged; past it, it is a failure.
        let deferral = match ending {
            Ending::Deferred { until, most } if !task.cancel_requested && task.deferrals < most => {
                Some(until.max(now))
            }
            _ => None,
        };
        let mut hold = None;
        let (phase, outcome) = match ending {
            Ending::Success => (Phase::Succeeded, Outcome::Succeeded),
            // Reached only when cancelled or halted: it waits for nothing more.
            Ending::Stopped | Ending::Suspended => (Phase::Cancelled, Outcome::Cancelled),
            Ending::Deferred { .. } if deferral.is_some() && halted => {
                (Phase::Cancelled, Outcome::Cancelled)
            }
            Ending::Deferred { .. } if deferral.is_some() => {
                let until = deferral.expect("checked");
                task.not_before = until;
                task.deferrals += 1;
                hold = task.group.clone().map(|group| (group, until));
                (Phase::Pending, Outcome::Deferred)
            }
            _ if task.cancel_requested => (Phase::Cancelled, Outcome::Cancelled),
            _ if attempts_left && halted => (Phase::Cancelled, Outcome::Cancelled),
            _ if attempts_left => {
                task.not_before = now;
                (Phase::Pending, ending.outcome())
            }
            _ => (Phase::Failed, ending.outcome()),
        };
        task.outcome = Some(outcome);
        task.phase = phase;
        let batch = task.batch;
        if let Some((group, until)) = hold {
            self.hold(&group, until);
        }
        if phase.is_ended() {
            self.settle(id);
        }
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
    pub fn hand_back(&mut self, id: TaskId) -> Option<Phase> {
        let task = self.task_mut(id).filter(|t| t.phase == Phase::Claimed)?;
        task.attempts -= 1;
        task.started = false;
        task.phase = if task.cancel_requested {
            task.outcome = Some(Outcome::Cancelled);
            Phase::Cancelled
        } else {
            Phase::Pending
        };
        let phase = task.phase;
        if phase.is_ended() {
            self.settle(id);
        }
        Some(phase)
    }

    /// Cancels a pending task; asks for a claimed one to be stopped.
    pub fn cancel(&mut self, id: TaskId) -> Option<CancelResult> {
        let task = self.task_mut(id)?;
        Some(match task.phase {
            Phase::Pending => {
                task.phase = Phase::Cancelled;
                task.outcome = Some(Outcome::Cancelled);
                self.settle(id);
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

    pub(super) fn cancel_pending(&mut self, batch: BatchId) -> u64 {
        let mut cancelled = 0;
        for task in self.tasks.iter_mut() {
            if task.batch == batch && task.phase == Phase::Pending {
                task.phase = Phase::Cancelled;
                task.outcome = Some(Outcome::Cancelled);
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

    /// Lowers to `ceiling` the priority of `tenant`'s batches above it, and of their tasks
    /// above it that have not started. Returns how many tasks changed.
    pub fn lower_tenant_priorities(&mut self, tenant: TenantId, ceiling: i32) -> u64 {
        let mut lowered = BTreeSet::new();
        for (&id, b) in self.batches.iter_mut() {
            if b.tenant == Some(tenant) {
                b.priority = b.priority.min(ceiling);
                lowered.insert(id);
            }
        }
        let mut changed = 0;
        for task in self.tasks.iter_mut() {
            if lowered.contains(&task.batch) && task.priority > ceiling && not_started(task) {
                task.priority = ceiling;
                changed += 1;
            }
        }
        changed
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
}
