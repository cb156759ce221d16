//! The store's vocabulary: task states, what is submitted, what is read back, what a
//! claim hands a node, and what nodes tell each other.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{BatchId, Micros, Progress, TaskId, TaskState};
use crate::runtime::{Digest, LogLine, MountGrant, Outcome, TaskLimits};

/// What a batch does when one of its tasks fails for good.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum FailurePolicy {
    /// Later orders still run.
    #[default]
    Continue,
    /// The batch's pending tasks are cancelled.
    Halt,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BatchSpec {
    pub name: Option<String>,
    pub priority: i32,
    /// At most this many of the batch's tasks run at once.
    pub max_parallel: Option<u32>,
    pub failure_policy: FailurePolicy,
    /// The origins its tasks may reach over HTTP (`SCHEME://HOST[:PORT|:*]`), within the
    /// operator's `--allow-http`; checked by the API before it reaches a store.
    #[serde(default)]
    pub allow_http: Vec<String>,
    /// Named values its tasks read through `wasi:config/store`; a secret one's value is
    /// sealed by the API before it reaches a store.
    #[serde(default)]
    pub settings: Vec<super::Setting>,
    /// Where its end and its tasks' final failures are posted, its secret sealed by the
    /// API before it reaches a store.
    #[serde(default)]
    pub webhook: Option<super::BatchHook>,
    /// What it may store; the scheduler fills in the server's defaults.
    #[serde(default)]
    pub quotas: super::Quotas,
    /// The tenant it belongs to; none: the admin's. Set from the caller's token, never
    /// from a request's body.
    #[serde(skip)]
    pub tenant: Option<super::TenantId>,
}

/// A task to submit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskSpec {
    pub module: Digest,
    pub input: Vec<u8>,
    pub order: i64,
    pub group: Option<String>,
    /// Defaults to the batch's priority.
    pub priority: Option<i32>,
    pub max_attempts: u32,
    /// Delay before the first retry; doubled for each further one, with jitter.
    pub backoff: Duration,
    pub limits: TaskLimits,
    pub mounts: Vec<MountGrant>,
    pub not_before: Option<Micros>,
    /// Its name in its batch, unique there, by which other tasks name it in `after`.
    pub key: Option<String>,
    /// The tasks of its batch it runs after: it is ready once each has ended, and reads
    /// their outputs (see [`super::graph`]).
    pub after: Vec<super::Dep>,
    /// It runs after every other task of its batch (`after: "*"`): a fan-in.
    pub fan_in: bool,
    /// What a dependency that did not succeed does to it, unless its edge says.
    pub on_failure: super::OnFailure,
    /// Tokens it spends of its group's rate, 1 to [`super::MAX_COST`] (see
    /// [`super::rate`]).
    pub cost: u32,
}

impl TaskSpec {
    pub fn new(module: Digest, input: impl Into<Vec<u8>>) -> Self {
        TaskSpec {
            module,
            input: input.into(),
            order: 0,
            group: None,
            priority: None,
            max_attempts: 3,
            backoff: Duration::from_secs(1),
            limits: TaskLimits::default(),
            mounts: Vec::new(),
            not_before: None,
            key: None,
            after: Vec::new(),
            fan_in: false,
            on_failure: super::OnFailure::Cancel,
            cost: 1,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ModuleInfo {
    pub digest: Digest,
    /// The name it is shown with: the last given to it that it still has.
    #[schema(required = true)]
    pub name: Option<String>,
    /// Every name it has, in the order they were given to it. Each names this module
    /// only, until it is removed or given to another module.
    #[serde(default)]
    #[schema(required = true)]
    pub names: Vec<String>,
    #[schema(required = true)]
    pub tag: Option<String>,
    pub size: u64,
    pub added_at: Micros,
    /// The source languages its `producers` sections name (of the component and every
    /// core module in it), as `Rust`; none when it was stored before qhost read them
    /// (unknown), empty when it names none.
    #[serde(default)]
    #[schema(required = true)]
    pub languages: Option<Vec<String>>,
    /// The tools those sections say made it, as `rustc 1.95.0`; none when unknown.
    #[serde(default)]
    #[schema(required = true)]
    pub processed_by: Option<Vec<String>>,
}

/// A module added (or added again), and the module its name was taken from.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ModuleAdded {
    #[serde(flatten)]
    pub module: ModuleInfo,
    /// The module the name given named until now, when it was another one: the name moved
    /// from it to this one, and it keeps its other names.
    #[serde(default)]
    #[schema(required = true)]
    pub name_moved_from: Option<Digest>,
}

impl std::ops::Deref for ModuleAdded {
    type Target = ModuleInfo;

    fn deref(&self) -> &ModuleInfo {
        &self.module
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BatchInfo {
    pub id: BatchId,
    #[schema(required = true)]
    pub name: Option<String>,
    pub priority: i32,
    #[schema(required = true, format = Int64, maximum = 4294967295_u64)]
    pub max_parallel: Option<u32>,
    pub failure_policy: FailurePolicy,
    pub sealed: bool,
    /// Paused: none of its tasks is claimed until it is resumed; `max_parallel` is what it
    /// gets back then.
    #[serde(default)]
    #[schema(required = true)]
    pub paused: bool,
    pub created_at: Micros,
    pub progress: Progress,
    /// The webhook it was opened with, if any (its secret is never shown).
    #[serde(default)]
    #[schema(required = true)]
    pub webhook: Option<super::WebhookView>,
    /// What it may store.
    #[serde(default)]
    #[schema(required = true)]
    pub quotas: super::Quotas,
    /// What it stores now, counted as its quotas count it.
    #[serde(default)]
    #[schema(required = true)]
    pub usage: super::Usage,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TaskInfo {
    pub id: TaskId,
    pub batch: BatchId,
    pub module: Digest,
    /// The module's name, as `GET /v1/modules` shows it (the name last given to that
    /// digest); none when it has none or was deleted since.
    #[serde(default)]
    #[schema(required = true)]
    pub module_name: Option<String>,
    pub order: i64,
    #[schema(required = true)]
    pub group: Option<String>,
    pub priority: i32,
    pub state: TaskState,
    /// Attempts made, over its whole life: a re-drive does not start them again.
    pub attempts: u32,
    /// The attempt it may run up to: its `max_attempts`, plus the attempts it had made
    /// when it was last re-driven (each re-drive grants the whole budget again), plus
    /// one for each time it was deferred (a deferred attempt uses none of the budget).
    pub max_attempts: u32,
    pub submitted_at: Micros,
    /// When a pending task that was delayed (`run_at`, `delay`) or is waiting out a retry's
    /// backoff becomes due; none when it is due at once or no longer pending.
    #[serde(default)]
    #[schema(required = true)]
    pub due_at: Option<Micros>,
    #[schema(required = true)]
    pub ended_at: Option<Micros>,
    #[schema(required = true)]
    pub outcome: Option<Outcome>,
    /// Its last attempt's error: in a list cut to 1 KiB, in a task's view or event to
    /// 4 KiB, followed by a mark saying how much more there was (`[cut: N bytes more in
    /// GET /v1/tasks/{id}/attempts/{attempt}]`).
    #[schema(required = true)]
    pub error: Option<String>,
    /// The whole error's length in bytes, which a list reads without reading the error
    /// whole (it reads a cut of it), so that the cut's mark can say how much more there is.
    #[serde(skip)]
    pub error_size: Option<u64>,
    #[schema(required = true)]
    pub output_size: Option<u64>,
    /// The size of its input in bytes.
    #[serde(default)]
    #[schema(required = true)]
    pub input_size: u64,
    /// Its name in its batch, by which other tasks name it in `after`.
    #[serde(default)]
    #[schema(required = true)]
    pub key: Option<String>,
    /// Tokens it spends of its group's rate when claimed.
    #[serde(default = "one_token")]
    #[schema(required = true, minimum = 1)]
    pub cost: u32,
}

fn one_token() -> u32 {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct GroupInfo {
    pub key: String,
    /// Its limit; while paused, the limit it gets back on resume.
    #[schema(format = Int64, maximum = 4294967295_u64)]
    pub limit: u32,
    /// Paused: none of its tasks is claimed until it is resumed.
    #[serde(default)]
    #[schema(required = true)]
    pub paused: bool,
    pub running: u64,
    /// Its tasks not claimed nor ended: `waiting`, `ready` or `held`.
    pub pending: u64,
    /// Its rate: how many of its tasks are claimed per period; none: no rate.
    #[serde(default)]
    #[schema(required = true)]
    pub rate: Option<super::GroupRate>,
}

/// A group in a list, idle or not: its limit and how many of its tasks are claimed.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct GroupRow {
    pub key: String,
    /// Its limit; while paused, the limit it gets back on resume.
    #[schema(format = Int64, maximum = 4294967295_u64)]
    pub limit: u32,
    /// Paused: none of its tasks is claimed until it is resumed.
    pub paused: bool,
    /// Its tasks claimed by a node (reserved or running).
    pub running: u64,
    /// Its rate: how many of its tasks are claimed per period; none: no rate.
    #[serde(default)]
    #[schema(required = true)]
    pub rate: Option<super::GroupRate>,
}

/// A task a node claimed, with all it needs to run it.
#[derive(Debug, Clone)]
pub struct ClaimedTask {
    pub id: TaskId,
    pub batch: BatchId,
    pub attempt: u32,
    pub module: Digest,
    pub input: Vec<u8>,
    pub order: i64,
    pub group: Option<String>,
    pub limits: TaskLimits,
    pub mounts: Vec<MountGrant>,
    pub lease_token: i64,
    pub claimed_at: Micros,
    /// The trace context it was submitted in (`traceparent`), if traces were on.
    pub trace: Option<String>,
    /// What its tenant's budget had left when it was claimed: the run ends with outcome
    /// `budget` once it used any of it.
    pub budget_left: super::Left,
}

/// What a claim took.
#[derive(Debug, Clone, Default)]
pub struct Claimed {
    pub tasks: Vec<ClaimedTask>,
    /// Some claimable tasks were passed over because another transaction held them (or
    /// their group's or batch's counter) at that moment: claim again shortly rather than
    /// wait for a wake-up. Only stores shared by several writers set it.
    pub contended: bool,
    /// When a claim took fewer tasks than it could: the earliest time a ready task held
    /// back by its retry delay becomes due, a group with a rate that holds ready tasks
    /// back gets a token again, or a held group or tenant is let go, if any is.
    pub next_due: Option<Micros>,
}

#[derive(Debug, Clone)]
pub struct ClaimParams {
    pub node: String,
    pub max: usize,
    pub now: Micros,
    pub lease: Duration,
}

/// A claimed task that its node started on a slot.
#[derive(Debug, Clone, Copy)]
pub struct Start {
    pub task: TaskId,
    /// Its batch, whose followers hear of the start.
    pub batch: BatchId,
    pub lease_token: i64,
    pub at: Micros,
}

/// One attempt in the execution log.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AttemptRecord {
    pub task: TaskId,
    pub batch: BatchId,
    /// The task's module.
    pub module: Digest,
    /// The module's name, as in [`TaskInfo::module_name`].
    #[serde(default)]
    #[schema(required = true)]
    pub module_name: Option<String>,
    pub attempt: u32,
    pub node: String,
    #[schema(required = true)]
    pub slot: Option<usize>,
    #[schema(required = true)]
    pub group: Option<String>,
    pub order: i64,
    pub started_at: Micros,
    pub ended_at: Micros,
    /// The CPU time its run used, in microseconds: its wasm and the host calls it made,
    /// not the time it waited. Null where no run measured it (lost with its node, or
    /// never started).
    #[serde(default)]
    #[schema(required = true)]
    pub cpu_micros: Option<Micros>,
    /// The memory its run held, in MiB-seconds: its size over time. Null where no run
    /// measured it.
    #[serde(default)]
    #[schema(required = true)]
    pub memory_mib_seconds: Option<f64>,
    /// The HTTP body bytes its run sent and received. Null where no run measured them.
    #[serde(default)]
    #[schema(required = true)]
    pub http_bytes: Option<u64>,
    pub outcome: Outcome,
    #[schema(required = true)]
    pub error: Option<String>,
    pub logs: Vec<LogLine>,
    /// What the attempt wrote to stdout, kept up to its limit.
    #[serde(flatten, with = "super::text::stdout")]
    #[schema(value_type = super::text::StdoutText)]
    pub stdout: Vec<u8>,
    #[serde(flatten, with = "super::text::stderr")]
    #[schema(value_type = super::text::StderrText)]
    pub stderr: Vec<u8>,
    /// The fields cut short in this view (`error`, `logs`, `stdout`, `stderr`), each kept
    /// up to 1 KiB in lists and 4 KiB in a task's view; empty when none was.
    /// `GET /v1/tasks/{id}/attempts/{attempt}` gives the attempt whole.
    #[serde(default)]
    #[schema(required = true)]
    pub cut: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AttemptFilter {
    pub batch: Option<BatchId>,
    pub task: Option<TaskId>,
    pub group: Option<String>,
    pub outcome: Option<Outcome>,
    pub since: Option<Micros>,
    pub until: Option<Micros>,
    /// Only attempts with a larger row position: for paging and following.
    pub after: Option<i64>,
    /// Only attempts with a smaller row position: for paging newest first.
    pub before: Option<i64>,
    /// Newest first (largest position first) instead of in the order they were written.
    pub newest_first: bool,
    pub limit: Option<usize>,
}

impl AttemptFilter {
    /// Attempts in a time range past which reading them from the index of start times
    /// may cost more than another way.
    pub const LONG_RANGE: i64 = 10_000;

    /// Whether a driver reads a page with a time range from the attempts in the range
    /// (found by the index of start times, then taken by position), given how many
    /// started in it (counted up to past [`Self::LONG_RANGE`]): yes for a short range; for
    /// a long one, unless a task or batch filter is more selective, or the page is read
    /// from the log's newest end with no `until` (walking back from the newest attempt
    /// meets the range at once), or an outcome or group has its own index. Without a time
    /// range, no.
    pub fn reads_by_time(&self, in_range: i64) -> bool {
        if self.since.is_none() && self.until.is_none() {
            return false;
        }
        if self.task.is_some() || self.batch.is_some() {
            return false;
        }
        if in_range <= Self::LONG_RANGE {
            return true;
        }
        let from_newest = self.newest_first && self.until.is_none();
        !from_newest && self.outcome.is_none() && self.group.is_none()
    }

    /// The time range, open ends filled.
    pub fn time_range(&self) -> (Micros, Micros) {
        (
            self.since.unwrap_or(Micros::MIN),
            self.until.unwrap_or(Micros::MAX),
        )
    }
}

/// A task running now (started on a slot, not only reserved), for the live view.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RunningTask {
    pub task: TaskId,
    pub batch: BatchId,
    pub node: String,
    /// The slot running it, when it runs on this node.
    #[schema(required = true)]
    pub slot: Option<usize>,
    pub attempt: u32,
    #[schema(required = true)]
    pub group: Option<String>,
    pub order: i64,
    /// When it started on its slot.
    pub since: Micros,
    pub lease_expires: Micros,
}

/// What `task_cancel` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelResult {
    /// It was pending and is now cancelled.
    Cancelled,
    /// It is running; its node was asked to stop it.
    Requested,
    /// It had already ended.
    AlreadyEnded,
}

/// News from the other nodes sharing a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// Work may have become claimable (a submission, a completion, a limit raised).
    Wake,
    /// Priorities or limits changed: tasks a node reserved and has not started may no
    /// longer be the ones the rules name. Nodes hand them back and claim again.
    Reclaim,
    /// Tasks of these batches ended (which also frees slots: a wake-up too).
    Batches(Vec<BatchId>),
    /// Tasks of these batches started: news for their event streams only.
    Started(Vec<BatchId>),
    /// A running task was asked to stop: renew leases now to learn which.
    Cancel,
    /// Signals may have been missed (the connection dropped): look at everything again.
    Resync,
}

/// A node's heartbeat.
#[derive(Debug, Clone)]
pub struct NodeBeat {
    pub node: String,
    pub workers: usize,
    pub started_at: Micros,
    pub now: Micros,
}

/// A node in the registry.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NodeInfo {
    pub node: String,
    pub workers: usize,
    pub started_at: Micros,
    pub heartbeat_at: Micros,
    /// The store's clock minus the node's, microseconds (0 when within tolerance).
    pub clock_offset: Micros,
    /// Its instance slots running a task now: counted by the scheduler from what runs,
    /// not kept in the registry.
    #[serde(default)]
    #[schema(required = true)]
    pub busy: usize,
}
