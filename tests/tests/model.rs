//! Model-based tests of the store drivers: random sequences of scheduling operations run on
//! a store and on the model ([`qhost::scheduler::model`]) side by side, and the store must
//! answer every operation as the model does. Above all every claim must take exactly the
//! tasks the model takes, in the same order; task states, attempts, group counters and
//! the store's counts per state are compared too.
//!
//! The sequences mix small submissions over a few groups, orders and priorities with
//! large ones (a queue longer than a claim reads at once, in one group or one limited
//! batch), so the drivers' bounded scans and their look behind a full scan are exercised.
//! Groups and batches are paused and resumed and their limits changed (0 included);
//! failed and cancelled tasks are re-driven, and tasks cancelled and reprioritized in
//! bulk, by task, batch or group and by outcome. Tasks run after earlier ones of their
//! submission or stored ones of their batch, with every failure policy. Claimed tasks
//! submit children (a key given again names the same child) and suspend to wait for them.
//! Tenants' weights change, and every claim divides its slots among the tenants with work
//! by their fair share, from the slot time their attempts held.
//!
//! A failure prints the shortest sequence proptest shrank it to, with what each step did,
//! and saves the case's seed in `target/tmp/proptest-regressions/model.txt`, which later
//! runs replay first; `PROPTEST_RNG_SEED=N` fixes the random seed of a whole run, and
//! `PROPTEST_CASES=N` runs N cases per driver instead of 1,000. A disagreement worth
//! keeping becomes a named sequence at the end of this file, run on every driver.

use std::any::Any;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};
use qhost::runtime::{Digest, Outcome};
use qhost::scheduler::model::{self, ClaimOutcome, Ending, Model, NewTask, Phase, Refused};
use qhost::store::postgres::PostgresStore;
use qhost::store::sqlite::SqliteStore;
use qhost::store::*;
use qhost_tests::admitted;
use qhost_tests::pg::TestDb;

const T0: Micros = 1_700_000_000_000_000;
const SECOND: Micros = 1_000_000;
/// Group keys are drawn from this many: few enough that groups fill up.
const GROUPS: u8 = 4;
/// At most this many batches per case.
const MAX_BATCHES: usize = 8;
/// Tenants a case's batches may belong to.
const TENANTS: u8 = 3;

fn group_key(n: u8) -> String {
    format!("g{n}")
}

/// A task of a small submission, as generated.
#[derive(Debug, Clone)]
struct Spec {
    order: i64,
    group: Option<u8>,
    priority: Option<i32>,
    max_attempts: u32,
    /// Due this many seconds after its submission.
    delay: Option<i64>,
    /// Tasks it runs after, each with its edge's policy: an earlier task of the same
    /// submission, or a stored one of its batch (of an order no higher than its own).
    after: Vec<(After, OnFailure)>,
    /// Tokens it spends of its group's rate: more than one only in a group.
    cost: u32,
}

/// A task a generated task runs after.
#[derive(Debug, Clone, Copy)]
enum After {
    Earlier(Pick),
    Stored(Pick),
}

fn after() -> impl Strategy<Value = Vec<(After, OnFailure)>> {
    let dep = prop_oneof![
        3 => pick().prop_map(After::Earlier),
        1 => pick().prop_map(After::Stored),
    ];
    let policy = prop_oneof![
        3 => Just(OnFailure::Cancel),
        2 => Just(OnFailure::Run),
        2 => Just(OnFailure::Skip),
    ];
    prop_oneof![
        3 => Just(Vec::new()),
        2 => prop::collection::vec((dep, policy), 1..=2),
    ]
}

/// Which one of the tasks or batches that qualify an operation acts on: the n-th, counting
/// around, so that it still picks one when shrinking removed some.
#[derive(Debug, Clone, Copy)]
struct Pick(usize);

impl Pick {
    fn of<T: Copy>(self, list: &[T]) -> Option<T> {
        (!list.is_empty()).then(|| list[self.0 % list.len()])
    }
}

fn pick() -> impl Strategy<Value = Pick> {
    (0..64usize).prop_map(Pick)
}

/// What a bulk action's selection is anchored on, as generated. A selection of the whole
/// store is left to the conformance suite: a store here may hold earlier cases' tasks.
#[derive(Debug, Clone)]
enum Anchor {
    Task(Pick),
    Batch(Pick),
    Group(u8),
}

/// A bulk action's selection, as generated.
#[derive(Debug, Clone)]
struct Sel {
    anchor: Anchor,
    outcomes: Vec<Outcome>,
}

fn sel() -> impl Strategy<Value = Sel> {
    let anchor = prop_oneof![
        2 => pick().prop_map(Anchor::Task),
        2 => pick().prop_map(Anchor::Batch),
        1 => (0..GROUPS).prop_map(Anchor::Group),
    ];
    let outcomes = prop_oneof![
        4 => Just(Vec::new()),
        1 => Just(vec![Outcome::GuestError]),
        1 => Just(vec![Outcome::Lost]),
        1 => Just(vec![Outcome::Cancelled]),
        1 => Just(vec![Outcome::GuestError, Outcome::Lost]),
    ];
    (anchor, outcomes).prop_map(|(anchor, outcomes)| Sel { anchor, outcomes })
}

/// What an attempt that burned `units` used of each meter: as many milliseconds of CPU,
/// MiB-seconds of memory and kB of HTTP bodies.
fn burned(units: i64) -> Spent {
    Spent {
        cpu_micros: units * 1000,
        memory_mib_ms: units * 1000,
        http_bytes: units * 1000,
    }
}

/// An operation as generated, before the model resolves what it acts on.
#[derive(Debug, Clone)]
enum Op {
    OpenBatch {
        priority: i32,
        max_parallel: Option<u32>,
        halt: bool,
        /// One of [`TENANTS`] tenants; none: the admin's.
        tenant: Option<u8>,
    },
    /// A tenant's running limit set (always at least 1) or lifted.
    SetTenantLimit {
        tenant: u8,
        limit: Option<u32>,
    },
    SetTenantMaxOpen {
        tenant: u8,
        limit: Option<u32>,
    },
    /// A tenant's priority ceiling set: its work not started above it drops to it.
    SetTenantCeiling {
        tenant: u8,
        ceiling: i32,
    },
    /// A tenant's budget set or lifted: what it meters (0: CPU, 1: memory, 2: HTTP, 3:
    /// all three), how much (in the units [`burned`] uses) and its period in seconds.
    SetTenantBudget {
        tenant: u8,
        budget: Option<(u8, u64, u64)>,
    },
    /// A tenant's weight in the fair share set.
    SetTenantWeight {
        tenant: u8,
        weight: u32,
    },
    Submit {
        batch: Pick,
        tasks: Vec<Spec>,
    },
    /// Many alike tasks at once: a queue longer than a claim reads.
    SubmitMany {
        batch: Pick,
        count: usize,
        order: i64,
        group: Option<u8>,
    },
    Claim {
        max: usize,
    },
    /// A rate set on a group (tasks, period in seconds, burst), or removed.
    SetGroupRate {
        group: u8,
        rate: Option<(u32, u64, u32)>,
    },
    Succeed {
        task: Pick,
    },
    Fail {
        task: Pick,
    },
    /// The attempt succeeded after using this many units of each meter ([`burned`]).
    Burn {
        task: Pick,
        cpu_ms: i64,
    },
    /// The node stopped the attempt (its task was cancelled).
    Stop {
        task: Pick,
    },
    /// The task asked to run again in `seconds` (`deferred`), allowed [`MOST_DEFERRALS`].
    Defer {
        task: Pick,
        seconds: i64,
    },
    /// Several attempts' ends reported at once, as a node writes them.
    CompleteMany {
        tasks: Vec<(Pick, Ending)>,
    },
    /// A completion whose lease token was never given: it must change nothing.
    CompleteStale {
        task: Pick,
    },
    /// A claimed task submits a child (its key one of a few, so that some repeat), after
    /// one of its other children or none.
    Spawn {
        parent: Pick,
        key: u8,
        priority: Option<i32>,
        after: Option<Pick>,
    },
    /// A claimed task's attempt suspends, to wait for its children.
    Suspend {
        task: Pick,
    },
    /// The node's leases are given up as lost (it restarted).
    Rescue,
    CancelPending {
        task: Pick,
    },
    CancelClaimed {
        task: Pick,
    },
    /// Any task, ended ones too.
    CancelAny {
        task: Pick,
    },
    CancelBatch {
        batch: Pick,
    },
    HandBack {
        tasks: Vec<Pick>,
    },
    SetTaskPriority {
        task: Pick,
        priority: i32,
    },
    SetBatchPriority {
        batch: Pick,
        priority: i32,
    },
    SetGroupLimit {
        group: u8,
        limit: u32,
    },
    PauseGroup {
        group: u8,
        paused: bool,
    },
    PauseBatch {
        batch: Pick,
        paused: bool,
    },
    SetMaxParallel {
        batch: Pick,
        max_parallel: Option<u32>,
    },
    /// Failed and cancelled tasks run again.
    Retry {
        select: Sel,
    },
    CancelWhere {
        select: Sel,
    },
    PriorityWhere {
        select: Sel,
        priority: i32,
    },
    Wait {
        seconds: i64,
    },
}

/// An operation resolved against the model: what to do to the store, and what the store
/// must answer.
#[derive(Debug, Clone)]
enum Step {
    Start,
    OpenBatch {
        priority: i32,
        max_parallel: Option<u32>,
        policy: FailurePolicy,
        id: BatchId,
        tenant: Option<TenantId>,
    },
    SetTenantLimit {
        tenant: TenantId,
        limit: Option<u32>,
    },
    SetTenantMaxOpen {
        tenant: TenantId,
        limit: Option<u32>,
    },
    SetTenantCeiling {
        tenant: TenantId,
        ceiling: i32,
        expect: u64,
    },
    SetTenantBudget {
        tenant: TenantId,
        budget: Option<Budget>,
        now: Micros,
    },
    SetTenantWeight {
        tenant: TenantId,
        weight: u32,
    },
    Submit {
        batch: BatchId,
        tasks: Vec<NewTask>,
        expect: Result<Vec<TaskId>, Refused>,
    },
    Claim {
        max: usize,
        now: Micros,
        expect: ClaimOutcome,
    },
    /// Attempts' ends reported in one call, applied in order in the model; each used
    /// `used` of its tenant's budget.
    Complete {
        tasks: Vec<(TaskId, Ending)>,
        used: Spent,
        now: Micros,
        /// The tasks that ended, with their batches, in id order.
        ended: Vec<(TaskId, BatchId)>,
        retried: usize,
    },
    CompleteStale {
        task: TaskId,
        now: Micros,
    },
    Spawn {
        parent: TaskId,
        key: String,
        order: i64,
        priority: i32,
        after: Vec<TaskId>,
        expect: Result<TaskId, model::SpawnRefused>,
    },
    Rescue {
        now: Micros,
        ended: Vec<(TaskId, BatchId)>,
        retried: usize,
    },
    HandBack {
        tasks: Vec<TaskId>,
        now: Micros,
        /// The tasks whose cancellation was asked, which end instead.
        ended: Vec<(TaskId, BatchId)>,
    },
    Cancel {
        task: TaskId,
        now: Micros,
        expect: CancelResult,
    },
    CancelBatch {
        batch: BatchId,
        now: Micros,
        expect: u64,
    },
    SetTaskPriority {
        task: TaskId,
        priority: i32,
        expect: bool,
    },
    SetBatchPriority {
        batch: BatchId,
        priority: i32,
        expect: u64,
    },
    SetGroupLimit {
        key: String,
        limit: u32,
    },
    SetGroupRate {
        key: String,
        rate: Option<GroupRate>,
    },
    SetGroupPaused {
        key: String,
        paused: bool,
    },
    SetBatchPaused {
        batch: BatchId,
        paused: bool,
    },
    SetMaxParallel {
        batch: BatchId,
        max_parallel: Option<u32>,
    },
    /// The selection names the model's tasks, batches and groups.
    Retry {
        select: TaskSelect,
        expect: Result<u64, Refused>,
    },
    CancelWhere {
        select: TaskSelect,
        now: Micros,
        expect: BulkCancel,
    },
    PriorityWhere {
        select: TaskSelect,
        priority: i32,
        expect: u64,
    },
    Wait {
        now: Micros,
    },
    /// Nothing to act on.
    Skip,
}

/// A short account of a step, for the history printed on failure.
fn describe(step: &Step) -> String {
    match step {
        Step::Start => "start".into(),
        Step::OpenBatch {
            priority,
            max_parallel,
            policy,
            id,
            tenant,
        } => format!(
            "open batch {id}: priority {priority}, max_parallel {max_parallel:?}, {policy:?}, \
             tenant {tenant:?}"
        ),
        Step::SetTenantLimit { tenant, limit } => {
            format!("tenant {tenant}: max_running {limit:?}")
        }
        Step::SetTenantMaxOpen { tenant, limit } => {
            format!("tenant {tenant}: max_open {limit:?}")
        }
        Step::SetTenantCeiling {
            tenant,
            ceiling,
            expect,
        } => format!("tenant {tenant}: max_priority {ceiling} -> {expect} tasks lowered"),
        Step::SetTenantBudget { tenant, budget, .. } => {
            format!("tenant {tenant}: budget {budget:?}")
        }
        Step::SetTenantWeight { tenant, weight } => format!("tenant {tenant}: weight {weight}"),
        Step::Submit {
            batch,
            tasks,
            expect,
        } => {
            let expect = match expect {
                Ok(ids) if ids.len() > 3 => {
                    format!("ids {}..={}", ids[0], ids[ids.len() - 1])
                }
                Ok(ids) => format!("ids {ids:?}"),
                Err(refused) => format!("refused ({refused:?})"),
            };
            let shown: Vec<String> = tasks
                .iter()
                .take(6)
                .map(|t| {
                    format!(
                        "[order {} group {:?} priority {:?} attempts {} not_before {:?} after {:?} cost {}]",
                        t.order, t.group, t.priority, t.max_attempts, t.not_before, t.after, t.cost
                    )
                })
                .collect();
            let more = if tasks.len() > 6 {
                format!(" and {} more alike", tasks.len() - 6)
            } else {
                String::new()
            };
            format!(
                "submit to batch {batch}: {}{more} -> {expect}",
                shown.join(" ")
            )
        }
        Step::Claim { max, now, expect } => format!(
            "claim {max} at T0+{}s -> {:?}, budget left {:?}, next due {:?}",
            (now - T0) / SECOND,
            expect.tasks,
            expect.budget_left,
            expect.next_due
        ),
        Step::Complete {
            tasks,
            used,
            ended,
            retried,
            ..
        } => {
            format!("complete {tasks:?} using {used:?} each -> ended {ended:?}, {retried} retried")
        }
        Step::CompleteStale { task, .. } => {
            format!("complete {task} with a lease token never given -> nothing changes")
        }
        Step::Spawn {
            parent,
            key,
            priority,
            after,
            expect,
            ..
        } => format!(
            "task {parent} spawns `{key}` priority {priority} after {after:?} -> {expect:?}"
        ),
        Step::Rescue { ended, retried, .. } => {
            format!("rescue the node's leases as lost -> ended {ended:?}, {retried} retried")
        }
        Step::HandBack { tasks, .. } => format!("hand back {tasks:?}"),
        Step::Cancel { task, expect, .. } => format!("cancel {task} -> {expect:?}"),
        Step::CancelBatch { batch, expect, .. } => {
            format!("cancel batch {batch} -> {expect} cancelled")
        }
        Step::SetTaskPriority {
            task,
            priority,
            expect,
        } => format!(
            "set task {task} priority {priority} -> {}",
            if *expect { "set" } else { "refused" }
        ),
        Step::SetBatchPriority {
            batch,
            priority,
            expect,
        } => format!("set batch {batch} priority {priority} -> {expect} tasks changed"),
        Step::SetGroupLimit { key, limit } => format!("set group {key} limit {limit}"),
        Step::SetGroupRate { key, rate } => format!("set group {key} rate {rate:?}"),
        Step::SetGroupPaused { key, paused } => {
            format!("{} group {key}", if *paused { "pause" } else { "resume" })
        }
        Step::SetBatchPaused { batch, paused } => {
            format!("{} batch {batch}", if *paused { "pause" } else { "resume" })
        }
        Step::SetMaxParallel {
            batch,
            max_parallel,
        } => format!("set batch {batch} max_parallel {max_parallel:?}"),
        Step::Retry { select, expect } => format!("retry {select:?} -> {expect:?} run again"),
        Step::CancelWhere { select, expect, .. } => format!("cancel {select:?} -> {expect:?}"),
        Step::PriorityWhere {
            select,
            priority,
            expect,
        } => format!("set priority {priority} of {select:?} -> {expect} changed"),
        Step::Wait { now } => format!("wait until T0+{}s", (now - T0) / SECOND),
        Step::Skip => "nothing to act on".into(),
    }
}

/// The tasks the `index`-th of `specs`, submitted to `batch`, runs after: earlier ones of
/// the submission and stored ones of the batch, each of an order no higher than its own
/// (a higher one is refused, which the conformance tests check), each once.
fn deps(
    m: &Model,
    batch: BatchId,
    specs: &[Spec],
    index: usize,
) -> Vec<(model::NewDep, OnFailure)> {
    let order = specs[index].order;
    let earlier: Vec<usize> = (0..index).filter(|&i| specs[i].order <= order).collect();
    let stored: Vec<TaskId> = m
        .tasks
        .iter()
        .filter(|t| t.batch == batch && t.order <= order)
        .map(|t| t.id)
        .collect();
    let mut deps: Vec<(model::NewDep, OnFailure)> = Vec::new();
    for &(dep, policy) in &specs[index].after {
        let dep = match dep {
            After::Earlier(pick) => pick.of(&earlier).map(model::NewDep::Earlier),
            After::Stored(pick) => pick.of(&stored).map(model::NewDep::Stored),
        };
        if let Some(dep) = dep
            && !deps.iter().any(|&(d, _)| d == dep)
        {
            deps.push((dep, policy));
        }
    }
    deps
}

/// The reference: the model, the clock, and the last operation resolved.
#[derive(Debug, Clone)]
struct Reference {
    model: Model,
    now: Micros,
    step: Step,
}

impl Reference {
    fn batches(&self) -> Vec<BatchId> {
        self.model.batches.keys().copied().collect()
    }

    fn tasks_in(&self, phase: Phase) -> Vec<TaskId> {
        self.model
            .tasks
            .iter()
            .filter(|t| t.phase == phase)
            .map(|t| t.id)
            .collect()
    }
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        prop_oneof![3 => Just(0i64), 2 => 1..=3i64],
        prop::option::weighted(0.5, 0..GROUPS),
        prop::option::weighted(0.3, -1..=2i32),
        1..=3u32,
        prop::option::weighted(0.15, 1..=3i64),
        after(),
        prop_oneof![3 => Just(1u32), 1 => 2..=4u32],
    )
        .prop_map(
            |(order, group, priority, max_attempts, delay, after, cost)| Spec {
                order,
                group,
                priority,
                max_attempts,
                delay,
                after,
                cost: if group.is_some() { cost } else { 1 },
            },
        )
}

fn claim_size() -> impl Strategy<Value = usize> {
    prop_oneof![
        12 => 1..=8usize,
        1 => Just(16usize),
        1 => 17..=64usize,
        1 => Just(600usize),
    ]
}

/// A generated selection against the model's tasks and batches; `None` when what it is
/// anchored on is gone (a shrunk sequence dropped it).
fn resolve(sel: &Sel, tasks: &[TaskId], batches: &[BatchId]) -> Option<TaskSelect> {
    let mut select = TaskSelect {
        outcomes: sel.outcomes.clone(),
        ..TaskSelect::default()
    };
    match sel.anchor {
        Anchor::Task(pick) => select.task = Some(pick.of(tasks)?),
        Anchor::Batch(pick) => select.batch = Some(pick.of(batches)?),
        Anchor::Group(group) => select.group = Some(group_key(group)),
    }
    Some(select)
}

struct Scheduling;

impl ReferenceStateMachine for Scheduling {
    type State = Reference;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<Reference> {
        Just(Reference {
            model: Model::new(),
            now: T0,
            step: Step::Start,
        })
        .boxed()
    }

    fn transitions(r: &Reference) -> BoxedStrategy<Op> {
        let has_batch = !r.model.batches.is_empty();
        let has_pending = r.model.tasks.iter().any(|t| t.phase == Phase::Pending);
        let has_claimed = r.model.tasks.iter().any(|t| t.phase == Phase::Claimed);
        // Only what applies now, with how often it comes.
        let mut ops: Vec<(u32, BoxedStrategy<Op>)> = vec![
            (10, claim_size().prop_map(|max| Op::Claim { max }).boxed()),
            (
                2,
                (0..GROUPS, 0..=3u32)
                    .prop_map(|(group, limit)| Op::SetGroupLimit { group, limit })
                    .boxed(),
            ),
            (
                1,
                (0..GROUPS, prop::bool::weighted(0.6))
                    .prop_map(|(group, paused)| Op::PauseGroup { group, paused })
                    .boxed(),
            ),
            (
                1,
                (1..=3i64).prop_map(|seconds| Op::Wait { seconds }).boxed(),
            ),
            (
                1,
                (0..TENANTS, prop::option::weighted(0.7, 1..=3u32))
                    .prop_map(|(tenant, limit)| Op::SetTenantLimit { tenant, limit })
                    .boxed(),
            ),
            (
                1,
                (0..TENANTS, prop::option::weighted(0.7, 2..=16u32))
                    .prop_map(|(tenant, limit)| Op::SetTenantMaxOpen { tenant, limit })
                    .boxed(),
            ),
            (
                1,
                (0..TENANTS, -1..=2i32)
                    .prop_map(|(tenant, ceiling)| Op::SetTenantCeiling { tenant, ceiling })
                    .boxed(),
            ),
            (
                1,
                (
                    0..TENANTS,
                    prop::option::weighted(
                        0.8,
                        (0..4u8, prop_oneof![Just(5u64), Just(20)], 1..=3u64),
                    ),
                )
                    .prop_map(|(tenant, budget)| Op::SetTenantBudget { tenant, budget })
                    .boxed(),
            ),
            (
                2,
                (0..TENANTS, 1..=5u32)
                    .prop_map(|(tenant, weight)| Op::SetTenantWeight { tenant, weight })
                    .boxed(),
            ),
            (
                1,
                (
                    0..GROUPS,
                    prop::option::weighted(0.8, (1..=3u32, 1..=4u64, 1..=2u32)),
                )
                    .prop_map(|(group, rate)| Op::SetGroupRate { group, rate })
                    .boxed(),
            ),
        ];
        if r.model.batches.len() < MAX_BATCHES {
            let open = (
                -1..=2i32,
                prop::option::weighted(0.35, 1..=3u32),
                prop::bool::weighted(0.3),
                prop::option::weighted(0.4, 0..TENANTS),
            )
                .prop_map(|(priority, max_parallel, halt, tenant)| Op::OpenBatch {
                    priority,
                    max_parallel,
                    halt,
                    tenant,
                });
            ops.push((3, open.boxed()));
        }
        if has_batch {
            let submit = (pick(), prop::collection::vec(spec(), 1..=6))
                .prop_map(|(batch, tasks)| Op::Submit { batch, tasks });
            let many = (
                pick(),
                prop_oneof![6 => 40..=150usize, 1 => 500..=700usize],
                0..=1i64,
                prop::option::weighted(0.6, 0..GROUPS),
            )
                .prop_map(|(batch, count, order, group)| Op::SubmitMany {
                    batch,
                    count,
                    order,
                    group,
                });
            let priority = (pick(), -1..=3i32)
                .prop_map(|(batch, priority)| Op::SetBatchPriority { batch, priority });
            ops.push((8, submit.boxed()));
            ops.push((1, many.boxed()));
            ops.push((2, priority.boxed()));
            ops.push((
                1,
                pick().prop_map(|batch| Op::CancelBatch { batch }).boxed(),
            ));
            let pause = (pick(), prop::bool::weighted(0.6))
                .prop_map(|(batch, paused)| Op::PauseBatch { batch, paused });
            ops.push((1, pause.boxed()));
            let limit = (pick(), prop::option::weighted(0.7, 0..=3u32)).prop_map(
                |(batch, max_parallel)| Op::SetMaxParallel {
                    batch,
                    max_parallel,
                },
            );
            ops.push((1, limit.boxed()));
        }
        if !r.model.tasks.is_empty() {
            let priority = (pick(), -1..=3i32)
                .prop_map(|(task, priority)| Op::SetTaskPriority { task, priority });
            ops.push((2, priority.boxed()));
            ops.push((1, pick().prop_map(|task| Op::CancelAny { task }).boxed()));
            let stale = pick().prop_map(|task| Op::CompleteStale { task });
            ops.push((1, stale.boxed()));
        }
        if !r.model.tasks.is_empty() {
            ops.push((2, sel().prop_map(|select| Op::Retry { select }).boxed()));
            ops.push((
                1,
                sel().prop_map(|select| Op::CancelWhere { select }).boxed(),
            ));
            let priority = (sel(), -1..=3i32)
                .prop_map(|(select, priority)| Op::PriorityWhere { select, priority });
            ops.push((1, priority.boxed()));
        }
        if has_pending {
            ops.push((
                1,
                pick().prop_map(|task| Op::CancelPending { task }).boxed(),
            ));
        }
        if has_claimed {
            let back =
                prop::collection::vec(pick(), 1..=3).prop_map(|tasks| Op::HandBack { tasks });
            ops.push((8, pick().prop_map(|task| Op::Succeed { task }).boxed()));
            let spawn = (
                pick(),
                0..3u8,
                prop::option::weighted(0.3, -1..=3i32),
                prop::option::weighted(0.3, pick()),
            )
                .prop_map(|(parent, key, priority, after)| Op::Spawn {
                    parent,
                    key,
                    priority,
                    after,
                });
            ops.push((4, spawn.boxed()));
            ops.push((2, pick().prop_map(|task| Op::Suspend { task }).boxed()));
            ops.push((4, pick().prop_map(|task| Op::Fail { task }).boxed()));
            ops.push((
                3,
                (pick(), 1..=12i64)
                    .prop_map(|(task, cpu_ms)| Op::Burn { task, cpu_ms })
                    .boxed(),
            ));
            ops.push((1, pick().prop_map(|task| Op::Stop { task }).boxed()));
            ops.push((
                2,
                (pick(), 0..=3i64)
                    .prop_map(|(task, seconds)| Op::Defer { task, seconds })
                    .boxed(),
            ));
            let ending = prop_oneof![
                3 => Just(Ending::Success),
                3 => Just(Ending::Failure),
                1 => Just(Ending::Stopped),
                1 => Just(Ending::Suspended),
            ];
            let many = prop::collection::vec((pick(), ending), 2..=4)
                .prop_map(|tasks| Op::CompleteMany { tasks });
            ops.push((2, many.boxed()));
            ops.push((1, Just(Op::Rescue).boxed()));
            ops.push((
                1,
                pick().prop_map(|task| Op::CancelClaimed { task }).boxed(),
            ));
            ops.push((2, back.boxed()));
        }
        proptest::strategy::Union::new_weighted(ops).boxed()
    }

    /// Resolves `op` against the model and applies it there. An operation left with
    /// nothing to act on (a shrunk sequence dropped what it picked from) does nothing.
    fn apply(mut r: Reference, op: &Op) -> Reference {
        let now = r.now;
        let batches = r.batches();
        let pending = r.tasks_in(Phase::Pending);
        let claimed = r.tasks_in(Phase::Claimed);
        let m = &mut r.model;
        let all: Vec<TaskId> = m.tasks.iter().map(|t| t.id).collect();
        // Applies attempts' ends in order, as one completion call does.
        let complete_using = |m: &mut Model, tasks: Vec<(TaskId, Ending)>, used: Spent| {
            if tasks.is_empty() {
                return Step::Skip;
            }
            let (mut ended, mut retried) = (Vec::new(), 0);
            for &(task, ending) in &tasks {
                let batch = m.task(task).expect("a picked task exists").batch;
                match m.complete_using(task, ending, now, used) {
                    Some(Phase::Pending) => retried += 1,
                    Some(_) => ended.push((task, batch)),
                    None => panic!("task {task} was picked as claimed"),
                }
            }
            ended.sort_unstable();
            Step::Complete {
                tasks,
                used,
                now,
                ended,
                retried,
            }
        };
        let complete = |m: &mut Model, tasks| complete_using(m, tasks, Spent::default());
        let one = |task: Option<TaskId>, ending| task.map(|t| (t, ending)).into_iter().collect();
        r.step = match op {
            Op::OpenBatch {
                priority,
                max_parallel,
                halt,
                tenant,
            } => {
                let policy = if *halt {
                    FailurePolicy::Halt
                } else {
                    FailurePolicy::Continue
                };
                let id = m.open_batch(*priority, *max_parallel, policy);
                let tenant = tenant.map(TenantId::from);
                if let Some(tenant) = tenant {
                    m.set_batch_tenant(id, tenant);
                }
                Step::OpenBatch {
                    priority: *priority,
                    max_parallel: *max_parallel,
                    policy,
                    id,
                    tenant,
                }
            }
            Op::SetTenantLimit { tenant, limit } => {
                let tenant = TenantId::from(*tenant);
                m.set_tenant_limit(tenant, *limit);
                Step::SetTenantLimit {
                    tenant,
                    limit: *limit,
                }
            }
            Op::SetTenantMaxOpen { tenant, limit } => {
                let tenant = TenantId::from(*tenant);
                m.set_tenant_max_open(tenant, *limit);
                Step::SetTenantMaxOpen {
                    tenant,
                    limit: *limit,
                }
            }
            Op::SetTenantCeiling { tenant, ceiling } => {
                let tenant = TenantId::from(*tenant);
                Step::SetTenantCeiling {
                    tenant,
                    ceiling: *ceiling,
                    expect: m.lower_tenant_priorities(tenant, *ceiling),
                }
            }
            Op::SetTenantBudget { tenant, budget } => {
                let tenant = TenantId::from(*tenant);
                let budget = budget.map(|(meters, amount, seconds)| {
                    let unit = burned(amount as i64);
                    let all = meters == 3;
                    Budget {
                        period: Duration::from_secs(seconds),
                        cpu: (meters == 0 || all).then(|| Duration::from_millis(amount)),
                        memory_mib_seconds: (meters == 1 || all).then_some(amount),
                        http_bytes: (meters == 2 || all).then_some(unit.http_bytes as u64),
                    }
                });
                m.set_tenant_budget(tenant, budget, now);
                Step::SetTenantBudget {
                    tenant,
                    budget,
                    now,
                }
            }
            Op::SetTenantWeight { tenant, weight } => {
                let tenant = TenantId::from(*tenant);
                m.set_tenant_weight(tenant, *weight);
                Step::SetTenantWeight {
                    tenant,
                    weight: *weight,
                }
            }
            Op::Submit { batch, tasks } => match batch.of(&batches) {
                None => Step::Skip,
                Some(batch) => {
                    let tasks: Vec<NewTask> = tasks
                        .iter()
                        .enumerate()
                        .map(|(index, s)| NewTask {
                            order: s.order,
                            group: s.group.map(group_key),
                            priority: s.priority,
                            max_attempts: s.max_attempts,
                            not_before: s.delay.map(|d| now + d * SECOND),
                            after: deps(m, batch, tasks, index),
                            cost: s.cost,
                        })
                        .collect();
                    let expect = m.submit(batch, &tasks);
                    Step::Submit {
                        batch,
                        tasks,
                        expect,
                    }
                }
            },
            Op::SubmitMany {
                batch,
                count,
                order,
                group,
            } => match batch.of(&batches) {
                None => Step::Skip,
                Some(batch) => {
                    let task = NewTask {
                        order: *order,
                        group: group.map(group_key),
                        priority: None,
                        max_attempts: 1,
                        not_before: None,
                        after: Vec::new(),
                        cost: 1,
                    };
                    let tasks = vec![task; *count];
                    let expect = m.submit(batch, &tasks);
                    Step::Submit {
                        batch,
                        tasks,
                        expect,
                    }
                }
            },
            Op::Claim { max } => Step::Claim {
                max: *max,
                now,
                expect: m.claim(now, *max),
            },
            Op::Succeed { task } => complete(m, one(task.of(&claimed), Ending::Success)),
            Op::Fail { task } => complete(m, one(task.of(&claimed), Ending::Failure)),
            Op::Burn { task, cpu_ms } => {
                complete_using(m, one(task.of(&claimed), Ending::Success), burned(*cpu_ms))
            }
            Op::Stop { task } => complete(m, one(task.of(&claimed), Ending::Stopped)),
            Op::Suspend { task } => complete(m, one(task.of(&claimed), Ending::Suspended)),
            Op::Spawn {
                parent,
                key,
                priority,
                after,
            } => match parent.of(&claimed) {
                None => Step::Skip,
                Some(parent) => {
                    let siblings: Vec<TaskId> = m
                        .children
                        .iter()
                        .filter(|((of, _), _)| *of == parent)
                        .map(|(_, &id)| id)
                        .collect();
                    let after: Vec<TaskId> =
                        after.and_then(|a| a.of(&siblings)).into_iter().collect();
                    let p = m.task(parent).expect("a picked task exists");
                    let (order, priority) = (p.order, priority.unwrap_or(p.priority));
                    let key = format!("k{key}");
                    let expect = m.spawn(parent, &key, Some(priority), &after);
                    Step::Spawn {
                        parent,
                        key,
                        order,
                        priority,
                        after,
                        expect,
                    }
                }
            },
            Op::Defer { task, seconds } => {
                let ending = Ending::Deferred {
                    until: now + seconds * SECOND,
                    most: MOST_DEFERRALS,
                };
                complete(m, one(task.of(&claimed), ending))
            }
            Op::CompleteMany { tasks } => {
                let mut left = claimed.clone();
                let mut picked = Vec::new();
                for (index, ending) in tasks {
                    if !left.is_empty() {
                        picked.push((left.remove(index.0 % left.len()), *ending));
                    }
                }
                complete(m, picked)
            }
            Op::Rescue => {
                // Lost attempts, in id order; they are retried while attempts remain.
                match complete(m, claimed.iter().map(|&t| (t, Ending::Lost)).collect()) {
                    Step::Complete {
                        now,
                        ended,
                        retried,
                        ..
                    } => Step::Rescue {
                        now,
                        ended,
                        retried,
                    },
                    other => other,
                }
            }
            Op::CompleteStale { task } => match task.of(&all) {
                None => Step::Skip,
                Some(task) => Step::CompleteStale { task, now },
            },
            Op::CancelPending { task } | Op::CancelClaimed { task } | Op::CancelAny { task } => {
                let list = match op {
                    Op::CancelPending { .. } => &pending,
                    Op::CancelClaimed { .. } => &claimed,
                    _ => &all,
                };
                match task.of(list) {
                    None => Step::Skip,
                    Some(task) => Step::Cancel {
                        task,
                        now,
                        expect: m.cancel(task).expect("a picked task exists"),
                    },
                }
            }
            Op::CancelBatch { batch } => match batch.of(&batches) {
                None => Step::Skip,
                Some(batch) => Step::CancelBatch {
                    batch,
                    now,
                    expect: m.cancel_batch(batch),
                },
            },
            Op::HandBack { tasks } => {
                let mut left = claimed.clone();
                let mut back = Vec::new();
                for index in tasks {
                    if left.is_empty() {
                        break;
                    }
                    back.push(left.remove(index.0 % left.len()));
                }
                let mut ended = Vec::new();
                for &task in &back {
                    if m.hand_back(task) == Some(Phase::Cancelled) {
                        let batch = m.task(task).expect("a handed-back task exists").batch;
                        ended.push((task, batch));
                    }
                }
                ended.sort_unstable();
                if back.is_empty() {
                    Step::Skip
                } else {
                    Step::HandBack {
                        tasks: back,
                        now: r.now,
                        ended,
                    }
                }
            }
            Op::SetTaskPriority { task, priority } => match task.of(&all) {
                None => Step::Skip,
                Some(task) => Step::SetTaskPriority {
                    task,
                    priority: *priority,
                    expect: m.set_task_priority(task, *priority),
                },
            },
            Op::SetBatchPriority { batch, priority } => match batch.of(&batches) {
                None => Step::Skip,
                Some(batch) => Step::SetBatchPriority {
                    batch,
                    priority: *priority,
                    expect: m.set_batch_priority(batch, *priority),
                },
            },
            Op::SetGroupLimit { group, limit } => {
                let key = group_key(*group);
                m.set_group_limit(&key, *limit);
                Step::SetGroupLimit { key, limit: *limit }
            }
            Op::SetGroupRate { group, rate } => {
                let key = group_key(*group);
                let rate = rate.map(|(limit, seconds, burst)| GroupRate {
                    limit,
                    period: Duration::from_secs(seconds),
                    burst,
                });
                m.set_group_rate(&key, rate);
                Step::SetGroupRate { key, rate }
            }
            Op::PauseGroup { group, paused } => {
                let key = group_key(*group);
                m.set_group_paused(&key, *paused);
                Step::SetGroupPaused {
                    key,
                    paused: *paused,
                }
            }
            Op::PauseBatch { batch, paused } => match batch.of(&batches) {
                None => Step::Skip,
                Some(batch) => {
                    m.set_batch_paused(batch, *paused);
                    Step::SetBatchPaused {
                        batch,
                        paused: *paused,
                    }
                }
            },
            Op::SetMaxParallel {
                batch,
                max_parallel,
            } => match batch.of(&batches) {
                None => Step::Skip,
                Some(batch) => {
                    m.set_batch_max_parallel(batch, *max_parallel);
                    Step::SetMaxParallel {
                        batch,
                        max_parallel: *max_parallel,
                    }
                }
            },
            Op::Retry { select } => match resolve(select, &all, &batches) {
                None => Step::Skip,
                Some(select) => Step::Retry {
                    expect: m.retry(&select),
                    select,
                },
            },
            Op::CancelWhere { select } => match resolve(select, &all, &batches) {
                None => Step::Skip,
                Some(select) => Step::CancelWhere {
                    expect: m.cancel_where(&select),
                    select,
                    now,
                },
            },
            Op::PriorityWhere { select, priority } => match resolve(select, &all, &batches) {
                None => Step::Skip,
                Some(select) => Step::PriorityWhere {
                    expect: m.set_priority_where(&select, *priority),
                    select,
                    priority: *priority,
                },
            },
            Op::Wait { seconds } => {
                r.now += seconds * SECOND;
                Step::Wait { now: r.now }
            }
        };
        r
    }
}

/// A store driver under test: how to make a fresh, empty store.
trait Driver: 'static {
    /// Cases one store serves before a fresh one is made (see [`Sut`]).
    const CASES_PER_STORE: usize;

    /// The store, and what must live as long as it (its directory, its schema).
    fn open(runtime: &tokio::runtime::Runtime) -> (Arc<dyn Store>, Box<dyn Any + Send>);

    /// Where a store waits between the cases it serves.
    fn kept() -> &'static Mutex<Option<Sut>>;
}

struct Sqlite;

impl Driver for Sqlite {
    const CASES_PER_STORE: usize = 1;

    fn open(_: &tokio::runtime::Runtime) -> (Arc<dyn Store>, Box<dyn Any + Send>) {
        // The rules are under test, not durability: a memory file system spares the syncs.
        let shm = std::path::Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            tempfile::tempdir_in(shm)
        } else {
            tempfile::tempdir()
        }
        .unwrap();
        let store = SqliteStore::open(&dir.path().join("model.db")).unwrap();
        (Arc::new(store), Box::new(dir))
    }

    fn kept() -> &'static Mutex<Option<Sut>> {
        static KEPT: Mutex<Option<Sut>> = Mutex::new(None);
        &KEPT
    }
}

struct Postgres;

impl Driver for Postgres {
    /// A fresh schema costs more than a whole case's operations.
    const CASES_PER_STORE: usize = 16;

    fn open(runtime: &tokio::runtime::Runtime) -> (Arc<dyn Store>, Box<dyn Any + Send>) {
        runtime.block_on(async {
            let db = TestDb::new().await;
            // The rules are under test, not durability: no commit waits for the disk.
            let url = format!("{}%20-csynchronous_commit%3Doff", db.url);
            let store = PostgresStore::connect(&url, "model").await.unwrap();
            (
                Arc::new(store) as Arc<dyn Store>,
                Box::new(db) as Box<dyn Any + Send>,
            )
        })
    }

    fn kept() -> &'static Mutex<Option<Sut>> {
        static KEPT: Mutex<Option<Sut>> = Mutex::new(None);
        &KEPT
    }
}

/// The store under test, and how this case's names map to the store's.
///
/// A store may serve several cases in a row ([`Driver::CASES_PER_STORE`]): a case that
/// passed ends every task it left open (and checks that with the model), so the next case
/// finds only ended tasks and idle groups of earlier cases, which no rule looks at. The
/// next case's model still starts empty, and its names are mapped: its tasks and batches
/// to the store's ids (numbered on from the earlier cases, in the same order), its group
/// keys to keys of its own, and its counts per state are the store's minus those found at
/// its start. The fair-queueing clock carries over, which moves every `vseq` of the case
/// by the same amount and leaves the claim order as it is. A case that failed drops its
/// store: the next one starts on a fresh store.
struct Sut {
    store: Arc<dyn Store>,
    runtime: tokio::runtime::Runtime,
    /// Dropped after the store and its runtime: the directory or schema it lives in.
    _home: Box<dyn Any + Send>,
    module: Digest,
    /// Cases this store has begun.
    cases: usize,
    /// This case's task and batch ids (the model's) to the store's, and back.
    tasks: BTreeMap<TaskId, TaskId>,
    tasks_back: BTreeMap<TaskId, TaskId>,
    /// The store's batch of each task, by the model's task id.
    task_batch: BTreeMap<TaskId, BatchId>,
    batches: BTreeMap<BatchId, BatchId>,
    /// This case's tenants (the model's ids) to the store's, and their names.
    tenants: BTreeMap<TenantId, (TenantId, String)>,
    /// Group keys of this case are this followed by the model's key.
    group_prefix: String,
    /// The store's counts per state when this case began.
    baseline: Progress,
    /// Lease tokens of claimed tasks, by the model's id.
    tokens: BTreeMap<TaskId, i64>,
    /// When each claimed task was last claimed, by the model's id: its attempt holds its
    /// slot from then.
    claimed_at: BTreeMap<TaskId, Micros>,
    history: Vec<String>,
}

impl Sut {
    fn fresh<D: Driver>() -> Sut {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (store, home) = D::open(&runtime);
        let module = runtime
            .block_on(store.module_put(b"not run".to_vec(), None, None, T0))
            .unwrap()
            .digest;
        Sut {
            store,
            runtime,
            _home: home,
            module,
            cases: 0,
            tasks: BTreeMap::new(),
            tasks_back: BTreeMap::new(),
            task_batch: BTreeMap::new(),
            batches: BTreeMap::new(),
            tenants: BTreeMap::new(),
            group_prefix: String::new(),
            baseline: Progress::default(),
            tokens: BTreeMap::new(),
            claimed_at: BTreeMap::new(),
            history: Vec::new(),
        }
    }

    /// Readies a store for its next case.
    fn begin(mut self) -> Sut {
        self.group_prefix = if self.cases == 0 {
            String::new()
        } else {
            format!("case{}-", self.cases)
        };
        self.cases += 1;
        self.baseline = self.runtime.block_on(self.store.task_counts()).unwrap();
        self.tasks.clear();
        self.tasks_back.clear();
        self.task_batch.clear();
        self.batches.clear();
        self.tenants.clear();
        self.tokens.clear();
        self.claimed_at.clear();
        self.history.clear();
        self
    }

    fn task(&self, id: TaskId) -> TaskId {
        self.tasks[&id]
    }

    fn batch(&self, id: BatchId) -> BatchId {
        self.batches[&id]
    }

    /// The store's tenant for the model's `tenant`, added on first use.
    /// The store's tenant for the model's `tenant`. A case's tenants are added at once, in
    /// the model's order, so that their ids (which break ties in the fair share) are too.
    fn tenant(&mut self, tenant: TenantId) -> (TenantId, String) {
        if self.tenants.is_empty() {
            for model in 0..TenantId::from(TENANTS) {
                let name = format!("{}t{model}", self.group_prefix);
                let info = self
                    .runtime
                    .block_on(self.store.tenant_add(name.clone(), T0))
                    .unwrap();
                self.tenants.insert(model, (info.id, name));
            }
        }
        self.tenants[&tenant].clone()
    }

    fn group(&self, key: &str) -> String {
        format!("{}{key}", self.group_prefix)
    }

    /// A selection of the model's tasks, batches and groups, as the store names them.
    fn select(&self, select: &TaskSelect) -> TaskSelect {
        TaskSelect {
            task: select.task.map(|t| self.task(t)),
            batch: select.batch.map(|b| self.batch(b)),
            group: select.group.as_deref().map(|g| self.group(g)),
            outcomes: select.outcomes.clone(),
            states: select.states.clone(),
            modules: select.modules.clone(),
            tasks: select.tasks.iter().map(|&t| self.task(t)).collect(),
        }
    }

    /// The store's counts per state, less those of earlier cases.
    async fn counts(&self) -> Progress {
        let now = self.store.task_counts().await.unwrap();
        let base = self.baseline;
        Progress {
            waiting: now.waiting - base.waiting,
            ready: now.ready - base.ready,
            held: now.held - base.held,
            reserved: now.reserved - base.reserved,
            running: now.running - base.running,
            succeeded: now.succeeded - base.succeeded,
            failed: now.failed - base.failed,
            cancelled: now.cancelled - base.cancelled,
        }
    }

    /// The steps so far, one per line, for a failure's message.
    fn history(&self) -> String {
        let mut text = String::from("steps (store and model agreed up to the last):\n");
        for (n, line) in self.history.iter().enumerate() {
            text.push_str(&format!("  {n:>3}. {line}\n"));
        }
        if self.cases > 1 {
            text.push_str(&format!(
                "(case {} on this store: ids and group keys above are the model's)\n",
                self.cases
            ));
        }
        text
    }

    /// The store's counts per state and its groups' counters against the model's.
    fn check_counts(&self, m: &Model, groups: bool) {
        self.runtime.block_on(async {
            let expected = model_counts(m, |_| true);
            let counts = self.counts().await;
            if counts != expected {
                panic!(
                    "the store counts {counts:?}, the model {expected:?}\n{}\n{}",
                    self.history(),
                    self.first_state_difference(m).await
                );
            }
            if !groups {
                return;
            }
            for (key, limit) in &m.groups {
                let group = self.store.group_get(self.group(key)).await.unwrap();
                let paused = m.paused_groups.contains(key);
                assert_eq!(
                    (group.limit, group.paused, group.running, group.pending),
                    (*limit, paused, m.group_claimed(key), m.group_pending(key)),
                    "group {key}: (limit, paused, running, waiting), store left, model right\n{}",
                    self.history()
                );
                assert_eq!(
                    group.rate.is_some(),
                    m.rates.contains_key(key),
                    "group {key}: has a rate, store left, model right\n{}",
                    self.history()
                );
            }
        });
    }

    /// The first task whose state differs between the store and the model, said plainly.
    async fn first_state_difference(&self, m: &Model) -> String {
        for task in &m.tasks {
            let info = self.store.task_get(self.task(task.id)).await.unwrap();
            let expected = m.state(task.id).unwrap();
            if info.state != expected {
                return format!(
                    "task {} (batch {}, order {}, group {:?}) is {:?} in the store, {expected:?} in the model",
                    task.id, task.batch, task.order, task.group, info.state
                );
            }
        }
        "every task's state agrees".into()
    }

    /// Ends every task the case left open, in the store and in the model alike.
    fn end_everything(&mut self, m: &mut Model, now: Micros) {
        let store = self.store.clone();
        let claimed: Vec<TaskId> = m
            .tasks
            .iter()
            .filter(|t| t.phase == Phase::Claimed)
            .map(|t| t.id)
            .collect();
        let batches: Vec<BatchId> = m.batches.keys().copied().collect();
        for &batch in &batches {
            m.cancel_batch(batch);
        }
        for &task in &claimed {
            m.complete(task, Ending::Stopped, now);
        }
        let completions = claimed
            .iter()
            .map(|&task| self.completion(task, Outcome::Cancelled, now))
            .collect();
        self.runtime.block_on(async {
            for &batch in &batches {
                store.batch_cancel(self.batch(batch), now).await.unwrap();
            }
            store.task_complete(completions, now).await.unwrap();
            // The next case's claims must not wake at this one's holds.
            for (_, name) in self.tenants.values() {
                let lift = TenantChange {
                    budget: Some(None),
                    ..TenantChange::default()
                };
                store.tenant_set(name.clone(), lift, now).await.unwrap();
            }
        });
        self.history.push(
            "end of the case: cancel every batch, stop every claimed task, lift every budget"
                .into(),
        );
        self.check_counts(m, true);
    }

    /// What a completion call (or a rescue) answered, against the model's ends.
    fn check_result(
        &self,
        result: CompleteResult,
        ended: &[(TaskId, BatchId)],
        retried: usize,
        at: &str,
    ) {
        let mut got: Vec<(TaskId, BatchId)> = result
            .ended
            .iter()
            .map(|(task, batch)| {
                let model_batch = self.batches.iter().find(|(_, b)| *b == batch);
                (self.tasks_back[task], *model_batch.unwrap().0)
            })
            .collect();
        got.sort_unstable();
        assert_eq!(
            (result.stale, got, result.retried),
            (0, ended.to_vec(), retried),
            "the completions' result (stale, ended, retried), store left, model right\n{at}"
        );
    }

    /// The completion a node reports for `ending`.
    fn ending(&self, task: TaskId, ending: Ending, now: Micros) -> Completion {
        let defer = match ending {
            Ending::Deferred { until, most } => Some(Defer { until, most }),
            _ => None,
        };
        Completion {
            defer,
            ..self.completion(task, outcome(ending), now)
        }
    }

    fn completion(&self, task: TaskId, outcome: Outcome, now: Micros) -> Completion {
        Completion {
            defer: None,
            task: self.task(task),
            batch: self.task_batch[&task],
            lease_token: self.tokens.get(&task).copied().unwrap_or(-1),
            node: "model".into(),
            slot: Some(0),
            // Its slot was held from its claim, as a node that claims and starts at once.
            started_at: self.claimed_at.get(&task).copied().unwrap_or(now - 1),
            ended_at: now,
            cpu_micros: None,
            memory_mib_seconds: None,
            http_bytes: None,
            outcome,
            error: (!outcome.is_success()).then(|| "failed".into()),
            output: outcome.is_success().then(Vec::new),
            logs: Vec::new(),
            stdout: Vec::new(),
            stderr: Vec::new(),
        }
    }
}

fn outcome(ending: Ending) -> Outcome {
    ending.outcome()
}

/// The deferrals a task may make in these runs: few, so that runs pass the bound.
const MOST_DEFERRALS: u32 = 2;

/// The model's counts per state of the tasks `which` selects.
fn model_counts(m: &Model, which: impl Fn(&model::Task) -> bool) -> Progress {
    let mut counts = Progress::default();
    for (task, (_, state)) in m.tasks.iter().zip(m.states()) {
        if !which(task) {
            continue;
        }
        match state {
            TaskState::Waiting => counts.waiting += 1,
            TaskState::Ready => counts.ready += 1,
            TaskState::Held => counts.held += 1,
            TaskState::Reserved => counts.reserved += 1,
            TaskState::Running => counts.running += 1,
            TaskState::Succeeded => counts.succeeded += 1,
            TaskState::Failed => counts.failed += 1,
            TaskState::Cancelled => counts.cancelled += 1,
        }
    }
    counts
}

struct StoreMatchesModel<D>(PhantomData<D>);

impl<D: Driver> StateMachineTest for StoreMatchesModel<D> {
    type SystemUnderTest = Sut;
    type Reference = Scheduling;

    fn init_test(_: &Reference) -> Sut {
        let kept = D::kept().lock().unwrap().take();
        kept.unwrap_or_else(Sut::fresh::<D>).begin()
    }

    fn apply(mut sut: Sut, r: &Reference, _: Op) -> Sut {
        sut.history.push(describe(&r.step));
        let store = sut.store.clone();
        let at = sut.history();
        match &r.step {
            Step::Start | Step::Wait { .. } | Step::Skip => {}
            Step::OpenBatch {
                priority,
                max_parallel,
                policy,
                id,
                tenant,
            } => {
                let tenant = tenant.map(|t| sut.tenant(t).0);
                let spec = BatchSpec {
                    name: None,
                    priority: *priority,
                    max_parallel: *max_parallel,
                    failure_policy: *policy,
                    allow_http: Vec::new(),
                    settings: Vec::new(),
                    webhook: None,
                    quotas: Quotas::default(),
                    tenant,
                };
                let mut hash = [0u8; 32];
                getrandom::fill(&mut hash).unwrap();
                let info = sut
                    .runtime
                    .block_on(store.batch_open(spec, hash, r.now))
                    .unwrap();
                let last = sut.batches.values().next_back().copied();
                assert!(
                    last.is_none_or(|last| info.id > last),
                    "batch ids grow\n{at}"
                );
                sut.batches.insert(*id, info.id);
            }
            Step::Submit {
                batch,
                tasks,
                expect,
            } => {
                // Earlier tasks of the submission are named by keys, the model's ids.
                let keyed = tasks.iter().any(|t| {
                    t.after
                        .iter()
                        .any(|(d, _)| matches!(d, model::NewDep::Earlier(_)))
                });
                let key = |index: usize| match expect {
                    Ok(ids) => format!("t{}", ids[index]),
                    Err(_) => format!("refused-{index}"),
                };
                let specs = tasks
                    .iter()
                    .enumerate()
                    .map(|(index, t)| TaskSpec {
                        order: t.order,
                        group: t.group.as_deref().map(|key| sut.group(key)),
                        priority: t.priority,
                        max_attempts: t.max_attempts,
                        backoff: Duration::ZERO,
                        not_before: t.not_before,
                        cost: t.cost,
                        key: keyed.then(|| key(index)),
                        after: t
                            .after
                            .iter()
                            .map(|&(dep, policy)| Dep {
                                on: match dep {
                                    model::NewDep::Earlier(at) => DepRef::Key(key(at)),
                                    model::NewDep::Stored(id) => DepRef::Task(sut.tasks[&id]),
                                },
                                on_failure: Some(policy),
                            })
                            .collect(),
                        ..TaskSpec::new(sut.module, Vec::new())
                    })
                    .collect();
                let got = sut.runtime.block_on(store.task_submit(
                    sut.batch(*batch),
                    admitted(specs),
                    r.now,
                ));
                match (got, expect) {
                    (Ok(ids), Ok(expected)) => {
                        // Submission order is id order, in the store as in the model.
                        assert_eq!(ids.len(), expected.len(), "tasks submitted\n{at}");
                        let mut last = sut.tasks.values().next_back().copied();
                        for (&model, &stored) in expected.iter().zip(&ids) {
                            assert!(
                                last.is_none_or(|last| stored > last),
                                "task ids grow in submission order: {ids:?}\n{at}"
                            );
                            last = Some(stored);
                            sut.tasks.insert(model, stored);
                            sut.tasks_back.insert(stored, model);
                            sut.task_batch.insert(model, sut.batch(*batch));
                        }
                    }
                    (
                        Err(StoreError::Invalid(_)),
                        Err(
                            Refused::BelowStarted { .. }
                            | Refused::UnknownDep { .. }
                            | Refused::DepAbove { .. },
                        ),
                    )
                    | (Err(StoreError::Quota(_)), Err(Refused::TenantFull { .. })) => {}
                    (got, expected) => {
                        panic!("submit answered {got:?}, the model {expected:?}\n{at}")
                    }
                }
            }
            Step::Claim { max, now, expect } => {
                let claimed = sut
                    .runtime
                    .block_on(store.task_claim(ClaimParams {
                        node: "model".into(),
                        max: *max,
                        now: *now,
                        lease: Duration::from_secs(3600),
                    }))
                    .unwrap();
                let got: Vec<(TaskId, u32)> = claimed
                    .tasks
                    .iter()
                    .map(|t| match sut.tasks_back.get(&t.id) {
                        Some(&id) => (id, t.attempt),
                        None => panic!("the store claimed task {}, of an earlier case\n{at}", t.id),
                    })
                    .collect();
                assert_eq!(
                    got, expect.tasks,
                    "the claimed tasks (id, attempt), in claim order: store left, model right\n{at}"
                );
                assert_eq!(claimed.next_due, expect.next_due, "the next due time\n{at}");
                let budget_left: BTreeMap<TaskId, Left> = claimed
                    .tasks
                    .iter()
                    .zip(&got)
                    .filter(|(task, _)| task.budget_left != Left::default())
                    .map(|(task, &(id, _))| (id, task.budget_left))
                    .collect();
                assert_eq!(
                    budget_left, expect.budget_left,
                    "what each task's tenant budget left it: store left, model right\n{at}"
                );
                assert!(!claimed.contended, "a lone claimer met contention\n{at}");
                for (task, (id, _)) in claimed.tasks.iter().zip(&got) {
                    sut.tokens.insert(*id, task.lease_token);
                    sut.claimed_at.insert(*id, *now);
                }
            }
            Step::Complete {
                tasks,
                used,
                now,
                ended,
                retried,
            } => {
                let completions = tasks
                    .iter()
                    .map(|&(task, ending)| Completion {
                        cpu_micros: Some(used.cpu_micros),
                        memory_mib_seconds: Some(used.memory_mib_ms as f64 / 1000.0),
                        http_bytes: Some(used.http_bytes as u64),
                        ..sut.ending(task, ending, *now)
                    })
                    .collect();
                let result = sut
                    .runtime
                    .block_on(store.task_complete(completions, *now))
                    .unwrap();
                sut.check_result(result, ended, *retried, &at);
            }
            Step::Spawn {
                parent,
                key,
                order,
                priority,
                after,
                expect,
            } => {
                let stored_parent = sut.task(*parent);
                let spec = TaskSpec {
                    order: *order,
                    priority: Some(*priority),
                    max_attempts: 1,
                    backoff: Duration::ZERO,
                    key: Some(qhost::store::spawn::child_key(stored_parent, key)),
                    after: after.iter().map(|&id| Dep::task(sut.task(id))).collect(),
                    on_failure: OnFailure::Run,
                    ..TaskSpec::new(sut.module, Vec::new())
                };
                let got = sut.runtime.block_on(store.task_spawn(
                    stored_parent,
                    admitted(vec![spec]),
                    r.now,
                ));
                match (got, expect) {
                    (Ok(id), Ok(child)) => match sut.tasks.get(child) {
                        Some(&known) => assert_eq!(id, known, "the child of that key\n{at}"),
                        None => {
                            let batch = sut.task_batch[parent];
                            sut.tasks.insert(*child, id);
                            sut.tasks_back.insert(id, *child);
                            sut.task_batch.insert(*child, batch);
                        }
                    },
                    (Err(_), Err(_)) => {}
                    (got, expect) => {
                        panic!("spawn: the store said {got:?}, the model {expect:?}\n{at}")
                    }
                }
            }
            Step::CompleteStale { task, now } => {
                let completion = Completion {
                    lease_token: -1,
                    ..sut.completion(*task, Outcome::Succeeded, *now)
                };
                let result = sut
                    .runtime
                    .block_on(store.task_complete(vec![completion], *now))
                    .unwrap();
                assert_eq!(
                    (result.stale, result.ended, result.retried),
                    (1, vec![], 0),
                    "a stale completion's result (stale, ended, retried)\n{at}"
                );
            }
            Step::Rescue {
                now,
                ended,
                retried,
            } => {
                let result = sut
                    .runtime
                    .block_on(store.lease_rescue(Some("model".into()), *now))
                    .unwrap();
                sut.check_result(result, ended, *retried, &at);
            }
            Step::HandBack { tasks, now, ended } => {
                let back = tasks
                    .iter()
                    .map(|t| (sut.task(*t), sut.tokens[t]))
                    .collect();
                let result = sut
                    .runtime
                    .block_on(store.task_hand_back(back, *now))
                    .unwrap();
                sut.check_result(result, ended, 0, &at);
            }
            Step::Cancel { task, now, expect } => {
                let got = sut
                    .runtime
                    .block_on(store.task_cancel(sut.task(*task), *now))
                    .unwrap();
                assert_eq!(got, *expect, "cancelling task {task}\n{at}");
            }
            Step::CancelBatch { batch, now, expect } => {
                let got = sut
                    .runtime
                    .block_on(store.batch_cancel(sut.batch(*batch), *now))
                    .unwrap();
                assert_eq!(got, *expect, "tasks cancelled with batch {batch}\n{at}");
            }
            Step::SetTaskPriority {
                task,
                priority,
                expect,
            } => {
                let got = sut
                    .runtime
                    .block_on(store.task_set_priority(sut.task(*task), *priority));
                match (got, expect) {
                    (Ok(()), true) | (Err(StoreError::Conflict(_)), false) => {}
                    (got, _) => panic!("setting task {task}'s priority answered {got:?}\n{at}"),
                }
            }
            Step::SetBatchPriority {
                batch,
                priority,
                expect,
            } => {
                let got = sut
                    .runtime
                    .block_on(store.batch_set_priority(sut.batch(*batch), *priority))
                    .unwrap();
                assert_eq!(got, *expect, "tasks whose priority changed\n{at}");
            }
            Step::SetGroupLimit { key, limit } => {
                sut.runtime
                    .block_on(store.group_set_limit(sut.group(key), *limit))
                    .unwrap();
            }
            Step::SetTenantLimit { tenant, limit } => {
                let (_, name) = sut.tenant(*tenant);
                let change = TenantChange {
                    max_running: Some(*limit),
                    ..TenantChange::default()
                };
                sut.runtime
                    .block_on(store.tenant_set(name, change, T0))
                    .unwrap();
            }
            Step::SetTenantWeight { tenant, weight } => {
                let (_, name) = sut.tenant(*tenant);
                let change = TenantChange {
                    weight: Some(*weight),
                    ..TenantChange::default()
                };
                sut.runtime
                    .block_on(store.tenant_set(name, change, T0))
                    .unwrap();
            }
            Step::SetTenantBudget {
                tenant,
                budget,
                now,
            } => {
                let (_, name) = sut.tenant(*tenant);
                let change = TenantChange {
                    budget: Some(*budget),
                    ..TenantChange::default()
                };
                sut.runtime
                    .block_on(store.tenant_set(name, change, *now))
                    .unwrap();
            }
            Step::SetTenantCeiling {
                tenant,
                ceiling,
                expect,
            } => {
                let (id, _) = sut.tenant(*tenant);
                let got = sut
                    .runtime
                    .block_on(store.tenant_lower_priorities(id, *ceiling))
                    .unwrap();
                assert_eq!(got, *expect, "tasks lowered to the ceiling\n{at}");
            }
            Step::SetTenantMaxOpen { tenant, limit } => {
                let (_, name) = sut.tenant(*tenant);
                let change = TenantChange {
                    max_open: Some(*limit),
                    ..TenantChange::default()
                };
                sut.runtime
                    .block_on(store.tenant_set(name, change, T0))
                    .unwrap();
            }
            Step::SetGroupRate { key, rate } => {
                sut.runtime
                    .block_on(store.group_set_rate(sut.group(key), *rate))
                    .unwrap();
            }
            Step::SetGroupPaused { key, paused } => {
                sut.runtime
                    .block_on(store.group_set_paused(sut.group(key), *paused))
                    .unwrap();
            }
            Step::SetBatchPaused { batch, paused } => {
                sut.runtime
                    .block_on(store.batch_set_paused(sut.batch(*batch), *paused))
                    .unwrap();
            }
            Step::SetMaxParallel {
                batch,
                max_parallel,
            } => {
                sut.runtime
                    .block_on(store.batch_set_max_parallel(sut.batch(*batch), *max_parallel))
                    .unwrap();
            }
            Step::Retry { select, expect } => {
                let got = sut.runtime.block_on(store.task_retry(sut.select(select)));
                match (got, expect) {
                    (Ok(got), Ok(expect)) => assert_eq!(got, *expect, "tasks run again\n{at}"),
                    (Err(StoreError::Quota(_)), Err(Refused::TenantFull { .. })) => {}
                    (got, expect) => {
                        panic!("re-drive: the store said {got:?}, the model {expect:?}\n{at}")
                    }
                }
            }
            Step::CancelWhere {
                select,
                now,
                expect,
            } => {
                let got = sut
                    .runtime
                    .block_on(store.task_cancel_where(sut.select(select), *now))
                    .unwrap();
                assert_eq!(got, *expect, "tasks cancelled and stopping\n{at}");
            }
            Step::PriorityWhere {
                select,
                priority,
                expect,
            } => {
                let got = sut
                    .runtime
                    .block_on(store.task_set_priority_where(sut.select(select), *priority))
                    .unwrap();
                assert_eq!(got, *expect, "tasks whose priority changed\n{at}");
            }
        }
        sut
    }

    /// After every step the store's counts per state; after a claim, its groups too.
    fn check_invariants(sut: &Sut, r: &Reference) {
        sut.check_counts(&r.model, matches!(r.step, Step::Claim { .. }));
    }

    /// At the end of a case everything is compared (see [`Sut::check_all`]); then, if the
    /// store serves more cases, every task left open is ended.
    fn teardown(mut sut: Sut, mut r: Reference) {
        sut.check_all(&r.model);
        if sut.cases < D::CASES_PER_STORE {
            sut.end_everything(&mut r.model, r.now);
            *D::kept().lock().unwrap() = Some(sut);
        }
    }
}

impl Sut {
    /// The groups, each batch's progress, and the tasks one by one (a sample of them in a
    /// case with many).
    fn check_all(&self, m: &Model) {
        let store = self.store.clone();
        self.check_counts(m, true);
        self.runtime.block_on(async {
            for (&tenant, (_, name)) in &self.tenants {
                let claimed = m
                    .tasks
                    .iter()
                    .filter(|t| {
                        t.phase == Phase::Claimed && m.batches[&t.batch].tenant == Some(tenant)
                    })
                    .count() as u32;
                let info = store.tenant_list().await.unwrap();
                let info = info.iter().find(|t| &t.name == name).unwrap();
                assert_eq!(
                    (info.running, info.max_running),
                    (claimed, m.tenant_limits.get(&tenant).copied()),
                    "tenant {tenant}: (running, max_running), store left, model right\n{}",
                    self.history()
                );
                assert_eq!(
                    (info.open, info.max_open),
                    (
                        m.tenant_open(tenant),
                        m.tenant_max_open.get(&tenant).copied()
                    ),
                    "tenant {tenant}: (open, max_open), store left, model right\n{}",
                    self.history()
                );
            }
            for &batch in m.batches.keys() {
                let expected = model_counts(m, |t| t.batch == batch);
                let info = store.batch_get(self.batch(batch)).await.unwrap();
                assert_eq!(
                    info.progress,
                    expected,
                    "batch {batch}'s progress, store left, model right\n{}",
                    self.history()
                );
                let b = &m.batches[&batch];
                assert_eq!(
                    (info.paused, info.max_parallel),
                    (b.paused, b.max_parallel),
                    "batch {batch}: (paused, max_parallel), store left, model right\n{}",
                    self.history()
                );
            }
            let stride = m.tasks.len().div_ceil(100).max(1);
            for (task, (_, state)) in m.tasks.iter().zip(m.states()).step_by(stride) {
                let info = store.task_get(self.task(task.id)).await.unwrap();
                let expected = (
                    state,
                    task.attempts,
                    task.redriven_after + task.max_attempts + task.deferrals,
                    task.priority,
                    task.outcome,
                );
                assert_eq!(
                    (
                        info.state,
                        info.attempts,
                        info.max_attempts,
                        info.priority,
                        info.outcome
                    ),
                    expected,
                    "task {}: (state, attempts, max attempts, priority, outcome), store left, \
                     model right\n{}",
                    task.id,
                    self.history()
                );
            }
        });
    }
}

/// Runs `ops` on a fresh store of driver `D` beside the model, compared as in the random
/// cases.
fn replay<D: Driver>(ops: &[Op]) {
    let mut r = Reference {
        model: Model::new(),
        now: T0,
        step: Step::Start,
    };
    let mut sut = Sut::fresh::<D>().begin();
    for op in ops {
        r = Scheduling::apply(r, op);
        sut = StoreMatchesModel::<D>::apply(sut, &r, op.clone());
        StoreMatchesModel::<D>::check_invariants(&sut, &r);
    }
    sut.check_all(&r.model);
}

fn task(order: i64, max_attempts: u32) -> Spec {
    Spec {
        after: Vec::new(),
        order,
        group: None,
        priority: None,
        max_attempts,
        delay: None,
        cost: 1,
    }
}

/// A batch limited to one task at a time fills the head of the queue, past what a claim
/// reads at once: the claim takes one of it, and the task of another batch behind it.
fn a_full_batch_at_the_head_hides_nothing_behind_it() -> Vec<Op> {
    vec![
        Op::OpenBatch {
            priority: 1,
            max_parallel: Some(1),
            halt: false,
            tenant: None,
        },
        Op::OpenBatch {
            priority: 0,
            max_parallel: None,
            halt: false,
            tenant: None,
        },
        Op::SubmitMany {
            batch: Pick(0),
            count: 40,
            order: 0,
            group: None,
        },
        Op::Submit {
            batch: Pick(1),
            tasks: vec![task(0, 1)],
        },
        Op::Claim { max: 2 },
    ]
}

/// One group fills the head of the queue; behind it a batch limited to one task at a time
/// and a free batch take turns: the claim takes one of the group, one of the limited
/// batch and both of the free one.
fn a_full_batch_behind_a_busy_group_hides_nothing_behind_it() -> Vec<Op> {
    vec![
        Op::OpenBatch {
            priority: 1,
            max_parallel: None,
            halt: false,
            tenant: None,
        },
        Op::OpenBatch {
            priority: 0,
            max_parallel: Some(1),
            halt: false,
            tenant: None,
        },
        Op::OpenBatch {
            priority: 0,
            max_parallel: None,
            halt: false,
            tenant: None,
        },
        Op::SubmitMany {
            batch: Pick(0),
            count: 50,
            order: 0,
            group: Some(0),
        },
        Op::Submit {
            batch: Pick(1),
            tasks: vec![task(0, 1); 3],
        },
        Op::Submit {
            batch: Pick(2),
            tasks: vec![task(0, 1); 2],
        },
        Op::Claim { max: 4 },
    ]
}

/// A claimed task handed back may have begun running: its order has started, and a lower
/// one is refused.
fn a_task_handed_back_has_started_its_order() -> Vec<Op> {
    vec![
        Op::OpenBatch {
            priority: 0,
            max_parallel: None,
            halt: false,
            tenant: None,
        },
        Op::Submit {
            batch: Pick(0),
            tasks: vec![task(1, 1)],
        },
        Op::Claim { max: 1 },
        Op::HandBack {
            tasks: vec![Pick(0)],
        },
        Op::Submit {
            batch: Pick(0),
            tasks: vec![task(0, 1)],
        },
    ]
}

/// Completions reported together apply in the order given: a halting batch's failure
/// cancels what is pending then, and a retry reported after it still goes back to the
/// queue, as it would in a call of its own.
fn completions_in_one_call_apply_in_order() -> Vec<Op> {
    vec![
        Op::OpenBatch {
            priority: 0,
            max_parallel: None,
            halt: true,
            tenant: None,
        },
        Op::Submit {
            batch: Pick(0),
            tasks: vec![task(0, 1), task(0, 2)],
        },
        Op::Claim { max: 2 },
        Op::CompleteMany {
            tasks: vec![(Pick(0), Ending::Failure), (Pick(0), Ending::Failure)],
        },
    ]
}

/// A rescue ends the lost attempts in id order, as completions would be.
fn lost_attempts_end_in_id_order() -> Vec<Op> {
    vec![
        Op::OpenBatch {
            priority: 0,
            max_parallel: None,
            halt: true,
            tenant: None,
        },
        Op::Submit {
            batch: Pick(0),
            tasks: vec![task(0, 1), task(0, 2)],
        },
        Op::Claim { max: 2 },
        Op::Rescue,
    ]
}

/// A failed lower order re-driven while a higher order runs: the running task runs on,
/// the reserved one handed back waits, and the ready one waits again.
fn a_retried_lower_order_closes_the_gate_for_what_has_not_started() -> Vec<Op> {
    vec![
        Op::OpenBatch {
            priority: 0,
            max_parallel: None,
            halt: false,
            tenant: None,
        },
        Op::Submit {
            batch: Pick(0),
            tasks: vec![task(0, 1), task(1, 1), task(1, 1), task(1, 1)],
        },
        Op::Claim { max: 1 },
        Op::Fail { task: Pick(0) },
        Op::Claim { max: 2 },
        Op::Retry {
            select: Sel {
                anchor: Anchor::Task(Pick(0)),
                outcomes: Vec::new(),
            },
        },
        Op::HandBack {
            tasks: vec![Pick(1)],
        },
        Op::Claim { max: 4 },
    ]
}

/// A task claimed above a gate that a re-drive then reopened fails with attempts left: it
/// goes back waiting behind the gate, not ready.
fn a_failure_above_a_reopened_gate_waits() -> Vec<Op> {
    vec![
        Op::OpenBatch {
            priority: 0,
            max_parallel: None,
            halt: false,
            tenant: None,
        },
        Op::Submit {
            batch: Pick(0),
            tasks: vec![task(0, 1), task(1, 2)],
        },
        Op::Claim { max: 1 },
        Op::Fail { task: Pick(0) },
        Op::Claim { max: 1 },
        Op::Retry {
            select: Sel {
                anchor: Anchor::Task(Pick(0)),
                outcomes: vec![Outcome::GuestError],
            },
        },
        Op::Fail { task: Pick(0) },
        Op::Claim { max: 2 },
    ]
}

/// A paused batch with a limit holds its tasks, takes a new limit while paused, and
/// resumes with it; a paused group holds its tasks across batches.
fn pauses_hold_and_resumes_keep_the_order() -> Vec<Op> {
    vec![
        Op::OpenBatch {
            priority: 0,
            max_parallel: Some(1),
            halt: false,
            tenant: None,
        },
        Op::OpenBatch {
            priority: 0,
            max_parallel: None,
            halt: false,
            tenant: None,
        },
        Op::SubmitMany {
            batch: Pick(0),
            count: 40,
            order: 0,
            group: None,
        },
        Op::SubmitMany {
            batch: Pick(1),
            count: 40,
            order: 0,
            group: Some(0),
        },
        Op::PauseBatch {
            batch: Pick(0),
            paused: true,
        },
        Op::PauseGroup {
            group: 0,
            paused: true,
        },
        Op::Claim { max: 8 },
        Op::SetMaxParallel {
            batch: Pick(0),
            max_parallel: Some(3),
        },
        Op::PauseBatch {
            batch: Pick(0),
            paused: false,
        },
        Op::Claim { max: 8 },
        Op::PauseGroup {
            group: 0,
            paused: false,
        },
        Op::Claim { max: 8 },
    ]
}

/// A parent handed back after it spawned a child, then made to wait again by a re-drive
/// of its own dependency, waits for that dependency and its child both: the child's end
/// alone does not make it ready.
fn a_redriven_dependency_counts_the_open_children_too() -> Vec<Op> {
    let after_first = Spec {
        after: vec![(After::Earlier(Pick(0)), OnFailure::Run)],
        ..task(0, 1)
    };
    vec![
        Op::OpenBatch {
            priority: 0,
            max_parallel: None,
            halt: false,
            tenant: None,
        },
        Op::Submit {
            batch: Pick(0),
            tasks: vec![task(0, 1), after_first],
        },
        Op::Claim { max: 1 },
        Op::Fail { task: Pick(0) },
        Op::Claim { max: 1 },
        Op::Spawn {
            parent: Pick(0),
            key: 0,
            priority: None,
            after: None,
        },
        Op::HandBack {
            tasks: vec![Pick(0)],
        },
        Op::Retry {
            select: Sel {
                anchor: Anchor::Task(Pick(0)),
                outcomes: Vec::new(),
            },
        },
        Op::Claim { max: 2 },
        Op::Succeed { task: Pick(1) },
        Op::Claim { max: 2 },
    ]
}

/// A bulk cancel ends its tasks in id order, each with what it ends in turn: a task after
/// the first (`cancel`) and the second (`skip`) is cancelled, not skipped.
fn a_bulk_cancel_settles_its_tasks_in_id_order() -> Vec<Op> {
    let grouped = Spec {
        group: Some(0),
        ..task(0, 1)
    };
    let after_both = Spec {
        after: vec![
            (After::Earlier(Pick(0)), OnFailure::Cancel),
            (After::Earlier(Pick(1)), OnFailure::Skip),
        ],
        ..task(0, 1)
    };
    vec![
        Op::OpenBatch {
            priority: 0,
            max_parallel: None,
            halt: false,
            tenant: None,
        },
        Op::Submit {
            batch: Pick(0),
            tasks: vec![grouped.clone(), grouped, after_both],
        },
        Op::CancelWhere {
            select: Sel {
                anchor: Anchor::Group(0),
                outcomes: Vec::new(),
            },
        },
        Op::Claim { max: 1 },
    ]
}

/// A tenant's open limit counts its tasks across its batches until they end: a
/// submission past it is refused whole, as is a re-drive; an ended task makes room.
fn a_tenants_open_limit_counts_until_tasks_end() -> Vec<Op> {
    let batch = Op::OpenBatch {
        priority: 0,
        max_parallel: None,
        halt: false,
        tenant: Some(0),
    };
    vec![
        batch.clone(),
        batch,
        Op::SetTenantMaxOpen {
            tenant: 0,
            limit: Some(3),
        },
        Op::Submit {
            batch: Pick(0),
            tasks: vec![task(0, 1), task(0, 1)],
        },
        Op::Submit {
            batch: Pick(1),
            tasks: vec![task(0, 1), task(0, 1)],
        },
        Op::Submit {
            batch: Pick(1),
            tasks: vec![task(0, 1)],
        },
        Op::Claim { max: 1 },
        Op::Fail { task: Pick(0) },
        Op::Submit {
            batch: Pick(1),
            tasks: vec![task(0, 1)],
        },
        Op::Retry {
            select: Sel {
                anchor: Anchor::Task(Pick(0)),
                outcomes: Vec::new(),
            },
        },
        Op::CancelPending { task: Pick(1) },
        Op::Retry {
            select: Sel {
                anchor: Anchor::Task(Pick(0)),
                outcomes: Vec::new(),
            },
        },
    ]
}

/// A tenant that had no work comes back at the fair clock: it does not take every slot
/// for the time it was away, and the tenant that ran meanwhile has its share again as soon
/// as their slot times are even.
fn a_tenant_back_from_idle_starts_at_the_fair_clock() -> Vec<Op> {
    let batch = |tenant| Op::OpenBatch {
        priority: 0,
        max_parallel: None,
        halt: false,
        tenant: Some(tenant),
    };
    let many = |batch, count| Op::SubmitMany {
        batch: Pick(batch),
        count,
        order: 0,
        group: None,
    };
    // Two attempts of 3 s each, claimed together.
    let run_two = || {
        vec![
            Op::Claim { max: 2 },
            Op::Wait { seconds: 3 },
            Op::Succeed { task: Pick(0) },
            Op::Succeed { task: Pick(0) },
        ]
    };
    let mut ops = vec![batch(0), batch(1), many(0, 20)];
    ops.extend(run_two());
    ops.extend(run_two());
    ops.push(many(1, 5));
    // Tenant 1 starts at the clock: both slots go to it while it is behind, then tenant 0
    // has them again.
    ops.extend(run_two());
    ops.extend(run_two());
    ops.extend(run_two());
    ops
}

/// Weights share the slots of each claim, and a new weight keeps what was served.
fn weights_share_each_claim() -> Vec<Op> {
    let batch = |tenant| Op::OpenBatch {
        priority: 0,
        max_parallel: None,
        halt: false,
        tenant: Some(tenant),
    };
    let many = |batch| Op::SubmitMany {
        batch: Pick(batch),
        count: 30,
        order: 0,
        group: None,
    };
    vec![
        batch(0),
        batch(1),
        batch(2),
        Op::SetTenantWeight {
            tenant: 1,
            weight: 2,
        },
        Op::SetTenantWeight {
            tenant: 2,
            weight: 5,
        },
        many(0),
        many(1),
        many(2),
        Op::Claim { max: 8 },
        Op::Wait { seconds: 2 },
        Op::Succeed { task: Pick(0) },
        Op::Succeed { task: Pick(3) },
        Op::Succeed { task: Pick(5) },
        Op::SetTenantWeight {
            tenant: 0,
            weight: 3,
        },
        Op::Claim { max: 3 },
        Op::Wait { seconds: 1 },
        Op::Rescue,
        Op::Claim { max: 8 },
    ]
}

/// Each sequence above, run on each driver: one named test per case and driver.
macro_rules! regressions {
    ($($case:ident),* $(,)?) => {
        mod sqlite_regressions {
            $(#[test]
            fn $case() {
                super::replay::<super::Sqlite>(&super::$case());
            })*
        }
        mod postgres_regressions {
            $(#[test]
            fn $case() {
                super::replay::<super::Postgres>(&super::$case());
            })*
        }
    };
}

/// Tasks of a rated group that cost more than one token, behind a busy group longer than
/// a claim reads: each is claimed while its group has a token, spends its cost, and one
/// dearer than the tokens left overdraws the bucket, which the next claims wait out.
fn dear_tasks_spend_their_cost_and_may_overdraw() -> Vec<Op> {
    let costing = |cost| Spec {
        group: Some(0),
        cost,
        ..task(0, 1)
    };
    vec![
        Op::OpenBatch {
            priority: 0,
            max_parallel: None,
            halt: false,
            tenant: None,
        },
        Op::SetGroupLimit { group: 0, limit: 3 },
        Op::SetGroupRate {
            group: 0,
            rate: Some((1, 1, 3)),
        },
        Op::SubmitMany {
            batch: Pick(0),
            count: 60,
            order: 0,
            group: Some(1),
        },
        Op::Submit {
            batch: Pick(0),
            tasks: vec![costing(2), costing(4), costing(1)],
        },
        Op::Claim { max: 4 },
        Op::Wait { seconds: 2 },
        Op::Claim { max: 4 },
        Op::Wait { seconds: 2 },
        Op::Claim { max: 4 },
        Op::Wait { seconds: 1 },
        Op::Claim { max: 4 },
    ]
}

regressions!(
    dear_tasks_spend_their_cost_and_may_overdraw,
    a_full_batch_at_the_head_hides_nothing_behind_it,
    a_full_batch_behind_a_busy_group_hides_nothing_behind_it,
    a_task_handed_back_has_started_its_order,
    completions_in_one_call_apply_in_order,
    lost_attempts_end_in_id_order,
    a_retried_lower_order_closes_the_gate_for_what_has_not_started,
    a_failure_above_a_reopened_gate_waits,
    pauses_hold_and_resumes_keep_the_order,
    a_redriven_dependency_counts_the_open_children_too,
    a_bulk_cancel_settles_its_tasks_in_id_order,
    a_tenants_open_limit_counts_until_tasks_end,
    a_tenant_back_from_idle_starts_at_the_fair_clock,
    weights_share_each_claim,
);

/// Cases per driver: `PROPTEST_CASES`, or 1,000. Shrinking a failure stops after a
/// minute (`PROPTEST_MAX_SHRINK_TIME`, milliseconds, says otherwise): each try of a
/// PostgreSQL case costs tens of milliseconds.
fn config() -> Config {
    let env = |name: &str| std::env::var(name).ok().and_then(|n| n.parse().ok());
    Config {
        cases: env("PROPTEST_CASES").unwrap_or(1000),
        max_shrink_time: env("PROPTEST_MAX_SHRINK_TIME").unwrap_or(60_000),
        // Seeds are kept beside the build, out of the sources: a seed stands for a case
        // only as long as the generators do not change.
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_TARGET_TMPDIR"),
            "/proptest-regressions/model.txt"
        )))),
        ..Config::default()
    }
}

prop_state_machine! {
    #![proptest_config(config())]

    fn sqlite_cases(sequential 1..80 => StoreMatchesModel<Sqlite>);

    fn postgres_cases(sequential 1..40 => StoreMatchesModel<Postgres>);
}

/// Drops the store the last case kept, when the test ends (statics are never dropped:
/// a PostgreSQL schema would outlive the run).
struct DropKept<D: Driver>(PhantomData<D>);

impl<D: Driver> Drop for DropKept<D> {
    fn drop(&mut self) {
        let kept = D::kept().lock().map(|mut kept| kept.take());
        drop(kept);
    }
}

#[test]
fn sqlite_claims_match_the_model() {
    let _kept = DropKept::<Sqlite>(PhantomData);
    sqlite_cases();
}

#[test]
fn postgres_claims_match_the_model() {
    let _kept = DropKept::<Postgres>(PhantomData);
    postgres_cases();
}
