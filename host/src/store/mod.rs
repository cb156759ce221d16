//! The durable store behind the scheduler: one driver trait, implemented per database.
//!
//! - [`sqlite`]: the embedded default, one file in WAL mode.
//! - [`postgres`]: several nodes sharing one PostgreSQL database.
//!
//! Every scheduling rule (ordering gates, group limits, batch limits, priority, fairness)
//! is enforced inside the driver's atomic claim; [`crate::scheduler::rules`] states the
//! same rules as plain functions. Methods are named entity first (`task_claim`,
//! `batch_open`) and take plain parameters or one params struct. Times are microseconds
//! since the Unix epoch, passed in by the caller so that tests control the clock.

mod errors;
mod fate;
mod pick;
pub mod postgres;
pub mod sqlite;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::runtime::{Digest, LogLine, MountGrant, Outcome, TaskLimits};

pub type TaskId = i64;
pub type BatchId = i64;
/// Microseconds since the Unix epoch.
pub type Micros = i64;

pub fn now_micros() -> Micros {
    to_micros(SystemTime::now())
}

pub fn to_micros(time: SystemTime) -> Micros {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as Micros)
        .unwrap_or(0)
        + clock_skew()
}

/// A deliberate error added to this process's clock, from `QHOST_CLOCK_SKEW_MS`: lets
/// tests run a node whose clock is off, as a badly synchronized machine's would be.
fn clock_skew() -> Micros {
    static SKEW: std::sync::OnceLock<Micros> = std::sync::OnceLock::new();
    *SKEW.get_or_init(|| {
        std::env::var("QHOST_CLOCK_SKEW_MS")
            .ok()
            .and_then(|ms| ms.trim().parse::<i64>().ok())
            .map_or(0, |ms| ms.saturating_mul(1000))
    })
}

/// A random non-negative number: lease tokens are built from it.
pub(crate) fn random_token() -> i64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the system random source");
    (u64::from_le_bytes(bytes) >> 1) as i64
}

pub fn duration_micros(d: Duration) -> Micros {
    d.as_micros().try_into().unwrap_or(Micros::MAX)
}

/// Opens the store a database URL names: `sqlite:PATH` (the embedded default) or
/// `postgres://...` (several nodes sharing one database). `node` names this node.
pub async fn open(url: &str, node: &str) -> anyhow::Result<std::sync::Arc<dyn Store>> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(std::sync::Arc::new(
            postgres::PostgresStore::connect(url, node).await?,
        ))
    } else if let Some(path) = url.strip_prefix("sqlite:") {
        let path = path.strip_prefix("//").unwrap_or(path);
        anyhow::ensure!(!path.is_empty(), "the database URL {url:?} names no file");
        Ok(std::sync::Arc::new(sqlite::SqliteStore::open(
            std::path::Path::new(path),
        )?))
    } else {
        anyhow::bail!(
            "the database URL {:?} is not supported: use sqlite:PATH or postgres://USER@HOST/DB",
            postgres::redact(url)
        )
    }
}

/// Where a task is in its life. Each variant says who moves a task into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskState {
    /// Submitted, behind its batch's gate: a lower order is still open. Moved to `Ready`
    /// by the transaction that ends the last open task of the lower orders.
    Waiting,
    /// At its batch's gate, claimable once its group and batch have room and its
    /// not-before time has come. Set by submit, by gate promotion, by a retry, and by a
    /// node handing back a task it had not started.
    Ready,
    /// Claimed by a node under a lease and not yet started on one of its slots: the few
    /// tasks a node holds ahead of its free slots. Set by the claim; the node's start mark
    /// makes it `Running`, a hand-back makes it `Ready` again.
    Reserved,
    /// Started on a node's slot, under the node's lease. Set by the node's start mark.
    Running,
    /// Ended: an attempt succeeded. Set by a completion.
    Succeeded,
    /// Ended: the last attempt failed, or the task was lost with no attempts left.
    Failed,
    /// Ended: cancelled by its batch's holder or an admin, or by a halting batch.
    Cancelled,
}

/// The state code stores report for a claimed task that has no start mark. The stores
/// keep every claimed task as code 2 (with or without a start mark); reads map an unmarked
/// one to this code, which is never stored.
pub(crate) const RESERVED_CODE: i64 = 6;

impl TaskState {
    /// The code the stores keep: 0 waiting, 1 ready, 2 claimed (reserved or running),
    /// 3 succeeded, 4 failed, 5 cancelled.
    pub fn code(self) -> i64 {
        match self {
            TaskState::Waiting => 0,
            TaskState::Ready => 1,
            TaskState::Reserved | TaskState::Running => 2,
            TaskState::Succeeded => 3,
            TaskState::Failed => 4,
            TaskState::Cancelled => 5,
        }
    }

    /// The state of a code as the stores report it: a stored code, or [`RESERVED_CODE`].
    pub fn from_code(code: i64) -> Option<Self> {
        Some(match code {
            0 => TaskState::Waiting,
            1 => TaskState::Ready,
            2 => TaskState::Running,
            3 => TaskState::Succeeded,
            4 => TaskState::Failed,
            5 => TaskState::Cancelled,
            RESERVED_CODE => TaskState::Reserved,
            _ => return None,
        })
    }

    pub fn is_ended(self) -> bool {
        matches!(
            self,
            TaskState::Succeeded | TaskState::Failed | TaskState::Cancelled
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Waiting => "waiting",
            TaskState::Ready => "ready",
            TaskState::Reserved => "reserved",
            TaskState::Running => "running",
            TaskState::Succeeded => "succeeded",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }
}

/// What a batch does when one of its tasks fails for good.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModuleInfo {
    pub digest: Digest,
    pub name: Option<String>,
    pub tag: Option<String>,
    pub size: u64,
    pub added_at: Micros,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BatchInfo {
    pub id: BatchId,
    pub name: Option<String>,
    pub priority: i32,
    pub max_parallel: Option<u32>,
    pub failure_policy: FailurePolicy,
    pub sealed: bool,
    pub created_at: Micros,
    pub progress: Progress,
}

/// How many of a batch's tasks are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub waiting: u64,
    pub ready: u64,
    pub reserved: u64,
    pub running: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub cancelled: u64,
}

impl Progress {
    pub fn total(&self) -> u64 {
        self.waiting + self.ready + self.reserved + self.running + self.ended()
    }

    pub fn ended(&self) -> u64 {
        self.succeeded + self.failed + self.cancelled
    }

    pub fn is_done(&self) -> bool {
        self.ended() == self.total()
    }

    pub(crate) fn add(&mut self, state: TaskState, count: u64) {
        match state {
            TaskState::Waiting => self.waiting += count,
            TaskState::Ready => self.ready += count,
            TaskState::Reserved => self.reserved += count,
            TaskState::Running => self.running += count,
            TaskState::Succeeded => self.succeeded += count,
            TaskState::Failed => self.failed += count,
            TaskState::Cancelled => self.cancelled += count,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskInfo {
    pub id: TaskId,
    pub batch: BatchId,
    pub module: Digest,
    pub order: i64,
    pub group: Option<String>,
    pub priority: i32,
    pub state: TaskState,
    pub attempts: u32,
    pub max_attempts: u32,
    pub submitted_at: Micros,
    pub ended_at: Option<Micros>,
    pub outcome: Option<Outcome>,
    pub error: Option<String>,
    pub output_size: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupInfo {
    pub key: String,
    pub limit: u32,
    pub running: u64,
    pub waiting: u64,
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
    /// back by its retry delay becomes due, if any is.
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
    pub lease_token: i64,
    pub at: Micros,
}

/// How one attempt ended, reported by the node that ran it.
#[derive(Debug, Clone)]
pub struct Completion {
    pub task: TaskId,
    pub lease_token: i64,
    pub node: String,
    pub slot: Option<usize>,
    pub started_at: Micros,
    pub ended_at: Micros,
    pub outcome: Outcome,
    pub error: Option<String>,
    pub output: Option<Vec<u8>>,
    pub logs: Vec<LogLine>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// The most a completion writes in each column, in bytes. Far below what either database
/// takes in one value (SQLite: 1e9 bytes by default; PostgreSQL: 1 GiB), and below that
/// all together, so one attempt's record can always be written. The runtime's own limits
/// keep runs well within these (at most 64 MiB of output, 16 MiB of each capture and of
/// log, 64 KiB of error): the drivers enforce them whatever a completion carries.
pub mod bounds {
    use crate::runtime::limits::MIB;

    /// An error message: cut, and marked, past it.
    pub const ERROR: usize = crate::runtime::limits::MAX_ERROR_BYTES;
    /// Output: a larger one ends the attempt `output-too-large`.
    pub const OUTPUT: usize = 128 * MIB as usize;
    /// Captured stdout, and stderr: cut past it.
    pub const CAPTURE: usize = 32 * MIB as usize;
    /// Log lines, as stored (JSON): later lines are dropped, and a last line says so.
    pub const LOG: usize = 64 * MIB as usize;
}

impl Completion {
    /// The completion with every column within [`bounds`], as the drivers write it.
    pub fn bounded(mut self) -> Completion {
        if let Some(error) = self.error.take() {
            self.error = Some(storable_text(error, bounds::ERROR));
        }
        if let Some(size) = self.output.as_ref().map(Vec::len)
            && size > bounds::OUTPUT
        {
            self.outcome = Outcome::OutputTooLarge;
            self.output = None;
            self.error = Some(format!(
                "returned {} of output, over the store's limit of {}",
                bytesize::ByteSize(size as u64),
                bytesize::ByteSize(bounds::OUTPUT as u64)
            ));
        }
        self.stdout.truncate(bounds::CAPTURE);
        self.stderr.truncate(bounds::CAPTURE);
        bound_logs(&mut self.logs, bounds::LOG);
        self
    }
}

/// Text a database's text column takes: within `max` bytes, and without NUL characters,
/// which PostgreSQL refuses in text (they become U+FFFD on every driver alike).
fn storable_text(text: String, max: usize) -> String {
    let text = if text.contains('\0') {
        text.replace('\0', "\u{FFFD}")
    } else {
        text
    };
    crate::runtime::outcome::cut_text(text, max)
}

/// Keeps the log lines whose JSON fits in `max` bytes; when some are dropped, a last line
/// says how many.
fn bound_logs(lines: &mut Vec<LogLine>, max: usize) {
    // JSON escapes a byte into at most 6; the rest of a line takes under 64.
    let most = lines
        .iter()
        .map(|l| 64 + 6 * l.message.len())
        .fold(0usize, usize::saturating_add);
    if most <= max {
        return;
    }
    // Room for the last line that says what was dropped.
    let mut room = max - 256;
    let mut keep = 0;
    for line in lines.iter() {
        let size = serde_json::to_string(line).map_or(usize::MAX, |json| json.len() + 1);
        if size > room {
            break;
        }
        room -= size;
        keep += 1;
    }
    let dropped = lines.len() - keep;
    let at_micros = lines.last().map_or(0, |l| l.at_micros);
    lines.truncate(keep);
    lines.push(LogLine {
        at_micros,
        level: crate::runtime::LogLevel::Warn,
        message: format!(
            "[qhost] {dropped} more log line(s) dropped: the log is over the store's limit of {}",
            bytesize::ByteSize(max as u64)
        ),
    });
}

/// How one attempt ended, as the execution log records it: from a node's completion, or
/// from a rescue (`lost`).
pub(crate) struct AttemptEnd<'a> {
    pub(crate) node: &'a str,
    pub(crate) slot: Option<usize>,
    pub(crate) started_at: Micros,
    pub(crate) ended_at: Micros,
    pub(crate) outcome: Outcome,
    pub(crate) error: Option<&'a str>,
    pub(crate) logs: &'a [LogLine],
    pub(crate) stdout: &'a [u8],
    pub(crate) stderr: &'a [u8],
}

impl<'a> AttemptEnd<'a> {
    pub(crate) fn of(c: &'a Completion) -> Self {
        AttemptEnd {
            node: &c.node,
            slot: c.slot,
            started_at: c.started_at,
            ended_at: c.ended_at,
            outcome: c.outcome,
            error: c.error.as_deref(),
            logs: &c.logs,
            stdout: &c.stdout,
            stderr: &c.stderr,
        }
    }
}

/// What a batch of completions did.
#[derive(Debug, Clone, Default)]
pub struct CompleteResult {
    /// Completions whose lease was no longer held (the attempt was rescued): ignored.
    pub stale: usize,
    /// Tasks that ended for good, with their batches.
    pub ended: Vec<(TaskId, BatchId)>,
    /// Tasks put back for another attempt.
    pub retried: usize,
}

/// One attempt in the execution log.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AttemptRecord {
    pub task: TaskId,
    pub batch: BatchId,
    pub attempt: u32,
    pub node: String,
    pub slot: Option<usize>,
    pub group: Option<String>,
    pub order: i64,
    pub started_at: Micros,
    pub ended_at: Micros,
    pub outcome: Outcome,
    pub error: Option<String>,
    pub logs: Vec<LogLine>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
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
    pub limit: Option<usize>,
}

/// A task running now (started on a slot, not only reserved), for the live view.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunningTask {
    pub task: TaskId,
    pub batch: BatchId,
    pub node: String,
    /// The slot running it, when it runs on this node.
    pub slot: Option<usize>,
    pub attempt: u32,
    pub group: Option<String>,
    pub order: i64,
    /// When it started on its slot.
    pub since: Micros,
    pub lease_expires: Micros,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{what} {id} does not exist")]
    NotFound { what: &'static str, id: String },
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Conflict(String),
    #[error("the batch handle does not match batch {0}")]
    Forbidden(BatchId),
    #[error("store failure: {0:#}")]
    Internal(#[from] anyhow::Error),
}

impl StoreError {
    /// Whether the database refused what was to be written: a value too large for it, or
    /// not valid for its column. Writing the same again fails again, whereas a database
    /// that is down, busy or restarting takes it once it is back.
    pub fn is_refusal(&self) -> bool {
        let StoreError::Internal(err) = self else {
            return false;
        };
        err.chain()
            .any(|cause| sqlite::is_refusal(cause) || postgres::is_refusal(cause))
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

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
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeInfo {
    pub node: String,
    pub workers: usize,
    pub started_at: Micros,
    pub heartbeat_at: Micros,
    /// The store's clock minus the node's, microseconds (0 when within tolerance).
    pub clock_offset: Micros,
}

/// The driver interface: one implementation per database.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    async fn module_put(
        &self,
        bytes: Vec<u8>,
        name: Option<String>,
        tag: Option<String>,
        now: Micros,
    ) -> StoreResult<ModuleInfo>;
    async fn module_bytes(&self, digest: Digest) -> StoreResult<Vec<u8>>;
    async fn module_list(&self) -> StoreResult<Vec<ModuleInfo>>;
    /// Refused while a task that has not ended uses it.
    async fn module_delete(&self, digest: Digest) -> StoreResult<()>;

    async fn batch_open(
        &self,
        spec: BatchSpec,
        handle_hash: [u8; 32],
        now: Micros,
    ) -> StoreResult<BatchInfo>;
    /// Replaces the hash of the batch's handle (the handle names the batch's id, known
    /// only once it is open).
    async fn batch_set_handle(&self, batch: BatchId, handle_hash: [u8; 32]) -> StoreResult<()>;
    async fn batch_get(&self, batch: BatchId) -> StoreResult<BatchInfo>;
    /// How many of the batch's tasks have not ended: cheap enough to ask after every
    /// completion (unlike the full progress counts).
    async fn batch_open_count(&self, batch: BatchId) -> StoreResult<u64>;
    /// Checks a handle's hash against the batch's.
    async fn batch_authorize(&self, batch: BatchId, handle_hash: [u8; 32]) -> StoreResult<()>;
    async fn batch_seal(&self, batch: BatchId) -> StoreResult<()>;
    /// Sets the priority of the batch and of all its tasks that have not started (pending
    /// or reserved: a node holding one hands it back on [`Signal::Reclaim`]).
    async fn batch_set_priority(&self, batch: BatchId, priority: i32) -> StoreResult<u64>;
    /// Cancels pending tasks and asks nodes to stop the claimed ones.
    async fn batch_cancel(&self, batch: BatchId, now: Micros) -> StoreResult<u64>;
    /// Removes an ended batch with all it owns: its tasks, their attempts, its order
    /// counts. No driver ever gives a batch's or a task's id again.
    async fn batch_release(&self, batch: BatchId) -> StoreResult<()>;

    async fn task_submit(
        &self,
        batch: BatchId,
        tasks: Vec<TaskSpec>,
        now: Micros,
    ) -> StoreResult<Vec<TaskId>>;
    async fn task_get(&self, task: TaskId) -> StoreResult<TaskInfo>;
    async fn task_output(&self, task: TaskId) -> StoreResult<Option<Vec<u8>>>;
    async fn task_set_priority(&self, task: TaskId, priority: i32) -> StoreResult<()>;
    async fn task_cancel(&self, task: TaskId, now: Micros) -> StoreResult<CancelResult>;

    async fn group_set_limit(&self, key: String, limit: u32) -> StoreResult<()>;
    async fn group_get(&self, key: String) -> StoreResult<GroupInfo>;

    /// Claims up to `max` tasks for a node, every scheduling rule checked in one
    /// atomic transaction.
    async fn task_claim(&self, params: ClaimParams) -> StoreResult<Claimed>;
    /// Records how attempts ended, in one transaction; a completion whose lease token no
    /// longer matches changes nothing.
    async fn task_complete(
        &self,
        completions: Vec<Completion>,
        now: Micros,
    ) -> StoreResult<CompleteResult>;
    /// Marks claimed tasks started on their node's slots: they were `Reserved`, they are
    /// `Running`. A start whose lease token no longer matches changes nothing.
    async fn task_start(&self, starts: Vec<Start>) -> StoreResult<()>;
    /// Puts claimed tasks back as they were before the claim, attempt not counted: a node
    /// hands back what it reserved and will not start (it is stopping, or ranks or limits
    /// changed). A task whose cancellation was asked ends `cancelled` instead, and is
    /// returned in `ended`.
    async fn task_release(
        &self,
        tasks: Vec<(TaskId, i64)>,
        now: Micros,
    ) -> StoreResult<CompleteResult>;
    /// Extends the leases of a node's running tasks; returns those asked to stop.
    async fn lease_renew(&self, node: String, until: Micros) -> StoreResult<Vec<TaskId>>;
    /// Ends as `lost` the attempts whose lease expired, or all of `node`'s (a node
    /// restarting), retrying their tasks while attempts remain.
    async fn lease_rescue(&self, node: Option<String>, now: Micros) -> StoreResult<CompleteResult>;

    /// How many tasks of the whole store are in each state.
    async fn task_counts(&self) -> StoreResult<Progress>;
    async fn attempt_list(&self, filter: AttemptFilter) -> StoreResult<Vec<(i64, AttemptRecord)>>;
    async fn running_list(&self) -> StoreResult<Vec<RunningTask>>;
    /// Deletes up to `chunk` ended tasks (with their attempts) that ended before `before`.
    async fn prune(&self, before: Micros, chunk: usize) -> StoreResult<usize>;

    /// News from other nodes; `None` for a store only this process uses.
    fn signals(&self) -> Option<broadcast::Receiver<Signal>> {
        None
    }
    /// Whether several nodes may share the store: they then rescue each other's expired
    /// leases and keep a registry of heartbeats.
    fn is_shared(&self) -> bool {
        false
    }
    async fn node_beat(&self, _beat: NodeBeat) -> StoreResult<()> {
        Ok(())
    }
    async fn node_list(&self) -> StoreResult<Vec<NodeInfo>> {
        Ok(Vec::new())
    }
    /// Removes a node that stopped cleanly from the registry.
    async fn node_remove(&self, _node: String) -> StoreResult<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::LogLevel;

    fn line(message: &str) -> LogLine {
        LogLine {
            at_micros: 7,
            level: LogLevel::Info,
            message: message.into(),
        }
    }

    #[test]
    fn a_log_over_the_bound_keeps_its_first_lines_and_says_how_many_were_dropped() {
        let mut lines: Vec<LogLine> = (0..1000).map(|_| line(&"x".repeat(100))).collect();
        bound_logs(&mut lines, 10 * 1024);
        let json = serde_json::to_string(&lines).unwrap();
        assert!(json.len() <= 10 * 1024, "{} bytes", json.len());
        let (mark, kept) = lines.split_last().unwrap();
        assert!(kept.iter().all(|l| l.message.len() == 100));
        assert_eq!(
            mark.message,
            format!(
                "[qhost] {} more log line(s) dropped: the log is over the store's limit of 10.0 KiB",
                1000 - kept.len()
            )
        );
        let mut small = vec![line("fine")];
        bound_logs(&mut small, 10_000);
        assert_eq!(small, vec![line("fine")]);
    }

    #[test]
    fn an_output_over_the_bound_ends_the_attempt_output_too_large() {
        let c = Completion {
            task: 1,
            lease_token: 1,
            node: "n".into(),
            slot: None,
            started_at: 0,
            ended_at: 1,
            outcome: Outcome::Succeeded,
            error: None,
            output: Some(vec![0; bounds::OUTPUT + 1]),
            logs: Vec::new(),
            stdout: vec![1; bounds::CAPTURE + 1],
            stderr: Vec::new(),
        }
        .bounded();
        assert_eq!((c.outcome, c.output), (Outcome::OutputTooLarge, None));
        assert!(c.error.unwrap().contains("over the store's limit"));
        assert_eq!(c.stdout.len(), bounds::CAPTURE);
    }
}
