//! The durable store behind the scheduler: one driver trait, implemented per database.
//!
//! - [`sqlite`]: the embedded default, one file in WAL mode.
//! - [`postgres`]: several nodes sharing one PostgreSQL database.
//!
//! Beside the trait: the vocabulary (`state`: the one word each view shows for a task's
//! state, and how reads compute it; `types`, `completion`, `time`, `schedule`, `text`:
//! captured output as JSON text, `select`: which tasks a bulk action reaches, `keys`:
//! requests done exactly once, `list`: lists' filters, order and pages, `stats`: the whole
//! queue at a glance, `webhook`: the outbox of events owed to webhooks, `usage`: what tenants and batches
//! used), the policies both drivers share (`pick`: claim order and rooms; `fair`: how a
//! claim divides its slots among tenants by weight; `rate`: a group's rate as a token bucket;
//! `admit`: what a submission may add and where it puts the gate; `quota`: what a batch
//! may store; `fate`: retry or end;
//! `errors`: the refusals), and `open`, which picks the driver a URL names.
//!
//! Every scheduling rule (ordering gates, group limits, batch limits, priority, fairness)
//! is enforced inside the driver's atomic claim; [`crate::scheduler::rules`] states the
//! same rules as plain functions. Methods are named entity first (`task_claim`,
//! `batch_open`) and take plain parameters or one params struct. Times are microseconds
//! since the Unix epoch, passed in by the caller so that tests control the clock.

mod admit;
pub(crate) mod budget;
mod completion;
mod cut;
mod errors;
pub mod fair;
mod fate;
mod grant;
pub mod graph;
pub(crate) mod hold;
mod keys;
pub(crate) mod limits;
mod list;
mod open;
mod pick;
pub mod postgres;
pub mod quota;
mod rate;
mod schedule;
mod select;
pub mod spawn;
pub mod sqlite;
mod state;
mod stats;
mod tenant;
mod tenant_maxima;
pub mod text;
mod time;
mod types;
mod usage;
mod webhook;

/// Tasks reach the store only as the scheduler admitted them: it checks them once, for
/// every path in.
pub use crate::scheduler::Admitted;
pub use budget::{Budget, BudgetUsed, Left, Spent, Window};
pub use completion::*;
pub use errors::{StoreError, StoreResult};
pub use grant::*;
pub use graph::{Dep, DepRef, Input, OnFailure};
pub use keys::{
    Answer, Created, HandleHasher, MAX_KEYS_PER_BATCH, NewBatch, NewHandle, RequestKey,
};
pub use list::*;
pub use open::open;
pub use quota::{QuotaChange, Quotas, Usage};
pub use rate::{Bucket, GroupRate, MAX_COST, check_cost};
pub use schedule::*;
pub use select::{BulkCancel, TaskSelect};
pub use state::*;
pub use stats::*;
pub use tenant::*;
pub use tenant_maxima::*;
pub use time::*;
pub use types::*;
pub use usage::*;
pub use webhook::*;

use async_trait::async_trait;
use tokio::sync::broadcast;

use crate::runtime::Digest;

pub type TaskId = i64;
pub type BatchId = i64;

/// A random non-negative number: lease tokens are built from it.
pub(crate) fn random_token() -> i64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the system random source");
    (u64::from_le_bytes(bytes) >> 1) as i64
}

/// The driver interface: one implementation per database.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Stores a module (a stored one keeps its bytes and time added). A name given is
    /// added to its names; when it named another module, it moves from that one alone.
    async fn module_put(
        &self,
        bytes: Vec<u8>,
        name: Option<String>,
        tag: Option<String>,
        now: Micros,
    ) -> StoreResult<ModuleAdded>;
    async fn module_bytes(&self, digest: Digest) -> StoreResult<Vec<u8>>;
    async fn module_list(&self) -> StoreResult<Vec<ModuleInfo>>;
    /// The modules that `names` name, as `(name, digest)`; a name that names none is left
    /// out. What a submission by name reads, instead of the whole list.
    async fn module_lookup(&self, names: Vec<String>) -> StoreResult<Vec<(String, Digest)>>;
    /// Refused while a task that has not ended uses it. Its names go with it.
    async fn module_delete(&self, digest: Digest) -> StoreResult<()>;
    /// Removes a name; the module it named keeps its others. Returns that module.
    async fn module_unname(&self, name: String) -> StoreResult<Digest>;

    /// Adds a tenant; refused when its name is taken.
    async fn tenant_add(&self, name: String, now: Micros) -> StoreResult<TenantInfo>;
    async fn tenant_list(&self) -> StoreResult<Vec<TenantInfo>>;
    async fn tenant_get(&self, tenant: TenantId) -> StoreResult<TenantInfo>;
    /// What a tenant's batches may do, its ceiling the server's (`server_max_priority`)
    /// where it sets none: its row alone, read on every request of its.
    async fn tenant_rules(
        &self,
        tenant: TenantId,
        server_max_priority: i32,
    ) -> StoreResult<TenantRules>;
    /// Changes what a tenant's batches may do, at `now` (a budget's window is read then).
    async fn tenant_set(
        &self,
        name: String,
        change: TenantChange,
        now: Micros,
    ) -> StoreResult<TenantInfo>;
    /// Lowers to `ceiling` the priority of a tenant's batches above it, and of their tasks
    /// above it that have not started (pending, or reserved: their nodes hand them back);
    /// returns how many tasks changed.
    async fn tenant_lower_priorities(&self, tenant: TenantId, ceiling: i32) -> StoreResult<u64>;
    /// Adds a token to a tenant, by the sha256 of its secret.
    async fn token_add(
        &self,
        tenant: String,
        secret_hash: [u8; 32],
        now: Micros,
    ) -> StoreResult<TokenInfo>;
    async fn token_list(&self, tenant: String) -> StoreResult<Vec<TokenInfo>>;
    /// Revokes a token of the tenant (again: no change).
    async fn token_revoke(&self, tenant: String, token: i64, now: Micros)
    -> StoreResult<TokenInfo>;
    /// The tenant whose token `token` is, if the token's secret hashes to `secret_hash`
    /// and it is not revoked; `NotFound` otherwise.
    async fn token_check(&self, token: i64, secret_hash: [u8; 32]) -> StoreResult<TenantId>;

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
    /// The batch's edges, (dependency, dependent), in dependent then dependency order: at
    /// most `limit`.
    async fn batch_edges(&self, batch: BatchId, limit: usize)
    -> StoreResult<Vec<(TaskId, TaskId)>>;
    /// What the batch was granted when opened ([`BatchSpec::allow_http`] and
    /// [`BatchSpec::settings`]); nothing for a batch granted nothing, or one that does
    /// not exist.
    async fn batch_grant(&self, batch: BatchId) -> StoreResult<Grant>;
    /// One secret setting of any batch, sealed as stored, if the store holds one: a node
    /// checks at start that its secret key opens it.
    async fn grant_secret_sample(&self) -> StoreResult<Option<Setting>>;
    /// How many of the batch's tasks have not ended: cheap enough to ask after every
    /// completion (unlike the full progress counts).
    async fn batch_open_count(&self, batch: BatchId) -> StoreResult<u64>;
    /// Checks a handle's hash against the batch's.
    /// Whether `key` opens the batch: the tenant it belongs to when it does, `Forbidden`
    /// when not, `NotFound` when it is gone.
    async fn batch_authorize(&self, batch: BatchId, key: BatchKey)
    -> StoreResult<Option<TenantId>>;
    /// The tenant the batch belongs to; none: the admin's.
    async fn batch_tenant(&self, batch: BatchId) -> StoreResult<Option<TenantId>>;
    async fn batch_seal(&self, batch: BatchId) -> StoreResult<()>;
    /// Sets the priority of the batch and of all its tasks that have not started (pending
    /// or reserved: a node holding one hands it back on [`Signal::Reclaim`]).
    async fn batch_set_priority(&self, batch: BatchId, priority: i32) -> StoreResult<u64>;
    /// Cancels pending tasks and asks nodes to stop the claimed ones.
    async fn batch_cancel(&self, batch: BatchId, now: Micros) -> StoreResult<u64>;
    /// Removes an ended batch with all it owns: its tasks, their attempts, its order
    /// counts. No driver ever gives a batch's or a task's id again.
    async fn batch_release(&self, batch: BatchId) -> StoreResult<()>;
    /// Changes the batch's quotas; what it already stores stays, even past a lowered one.
    async fn batch_set_quotas(&self, batch: BatchId, change: QuotaChange)
    -> StoreResult<BatchInfo>;

    async fn task_submit(
        &self,
        batch: BatchId,
        tasks: Admitted,
        now: Micros,
    ) -> StoreResult<Vec<TaskId>>;
    async fn task_get(&self, task: TaskId) -> StoreResult<TaskInfo>;
    async fn task_output(&self, task: TaskId) -> StoreResult<Option<Vec<u8>>>;
    /// A task's input, as it was submitted.
    async fn task_input(&self, task: TaskId) -> StoreResult<Vec<u8>>;
    /// What the tasks `task` runs after ended with, their outputs included, for its
    /// attempt; refused past [`graph::MAX_INPUTS`] bytes of outputs.
    async fn task_inputs(&self, task: TaskId) -> StoreResult<Vec<Input>>;
    /// Submits a child of the running task `parent` into its batch, at its order, with an
    /// edge to it (see [`spawn`]); the child's key is already `<parent>/<key>`. A key the
    /// parent gave before gets that child's id, and nothing is written.
    async fn task_spawn(
        &self,
        parent: TaskId,
        child: Admitted,
        now: Micros,
    ) -> StoreResult<TaskId> {
        let _ = (parent, child, now);
        Err(StoreError::Invalid(
            "this store does not take children from running tasks".into(),
        ))
    }
    /// The state `task`'s last suspended attempt saved.
    async fn task_saved(&self, task: TaskId) -> StoreResult<Option<Vec<u8>>> {
        let _ = task;
        Ok(None)
    }
    async fn task_set_priority(&self, task: TaskId, priority: i32) -> StoreResult<()>;
    async fn task_cancel(&self, task: TaskId, now: Micros) -> StoreResult<CancelResult>;

    /// Sets how many of a group's tasks may be claimed at once; 0 holds them all. A lower
    /// limit reaches tasks reserved beyond it on [`Signal::Reclaim`].
    async fn group_set_limit(&self, key: String, limit: u32) -> StoreResult<()>;
    /// Sets a group's rate (`None`: removes it), creating the group if needed. A rate set
    /// anew starts with its full burst.
    async fn group_set_rate(&self, key: String, rate: Option<GroupRate>) -> StoreResult<()>;
    async fn group_get(&self, key: String) -> StoreResult<GroupInfo>;
    /// Up to `limit` groups after the key `after` in key order, idle ones too; only the
    /// groups `batch`'s tasks name when given.
    async fn group_list(
        &self,
        after: String,
        batch: Option<BatchId>,
        limit: usize,
    ) -> StoreResult<Vec<GroupRow>>;

    /// Pauses a group (none of its tasks is claimed; reserved ones go back on
    /// [`Signal::Reclaim`]), keeping its limit for when it is resumed; or resumes it.
    /// Creates the group if needed.
    async fn group_set_paused(&self, key: String, paused: bool) -> StoreResult<()>;
    /// Pauses a batch (none of its tasks is claimed; reserved ones go back on
    /// [`Signal::Reclaim`]), keeping its `max_parallel` for when it is resumed; or
    /// resumes it. Its tasks keep their places in the queue.
    async fn batch_set_paused(&self, batch: BatchId, paused: bool) -> StoreResult<()>;
    /// Sets a batch's `max_parallel` (`None`: no limit; 0 holds every task); a paused
    /// batch gets it when it is resumed.
    async fn batch_set_max_parallel(
        &self,
        batch: BatchId,
        max_parallel: Option<u32>,
    ) -> StoreResult<()>;

    /// Runs again, with fresh attempts, the failed and cancelled tasks `select` names:
    /// each goes back to its batch's gate (a lower order reopens the gate for the tasks
    /// of higher orders that have not started), with the whole `max_attempts` budget
    /// again and a new place in its batch's fair queue. Attempt numbers go on growing.
    /// Refused, with nothing changed, when a task's module no longer exists. Returns how
    /// many tasks run again.
    async fn task_retry(&self, select: TaskSelect) -> StoreResult<u64>;
    /// Cancels the pending tasks `select` names, and asks nodes to stop its claimed ones.
    async fn task_cancel_where(&self, select: TaskSelect, now: Micros) -> StoreResult<BulkCancel>;
    /// Sets the priority of the tasks `select` names that have not started; returns how
    /// many changed.
    async fn task_set_priority_where(&self, select: TaskSelect, priority: i32) -> StoreResult<u64>;

    /// Opens a batch and submits its tasks, in one transaction: a refused submission
    /// leaves nothing. With a key, a repeat of the request gets the first answer.
    async fn batch_create(&self, new: NewBatch, now: Micros) -> StoreResult<Answer<Created>>;
    /// Submits tasks as [`Store::task_submit`] does, once per key: a repeat of the
    /// request gets the first answer.
    async fn task_submit_keyed(
        &self,
        batch: BatchId,
        tasks: Admitted,
        key: RequestKey,
        now: Micros,
    ) -> StoreResult<Answer<Vec<TaskId>>>;

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
    /// Records what a node's runs reported: the start marks of `starts`, as
    /// [`Store::task_start`] does, then the ends of `completions`, as
    /// [`Store::task_complete`] does. SQLite writes both in one transaction: its one
    /// writer commits once, not twice, and the pages both touch are written once.
    async fn task_report(
        &self,
        starts: Vec<Start>,
        completions: Vec<Completion>,
        now: Micros,
    ) -> StoreResult<CompleteResult>;
    /// Whether [`Store::task_report_claim`] claims in the report's own transaction. A
    /// node whose claim loop waits for work then leaves its claim with the writer, so that
    /// a task made ready by a report (a gate opened, a dependency ended) is claimed by the
    /// transaction that made it ready, not by one more after it.
    fn claims_in_reports(&self) -> bool {
        false
    }
    /// Records a report as [`Store::task_report`] does, then claims as
    /// [`Store::task_claim`] does, at the report's time (`claim.now`). A store that
    /// [claims in reports](Store::claims_in_reports) does both in one transaction; this
    /// one does the two in turn.
    async fn task_report_claim(
        &self,
        starts: Vec<Start>,
        completions: Vec<Completion>,
        claim: ClaimParams,
    ) -> StoreResult<(CompleteResult, Claimed)> {
        let report = self.task_report(starts, completions, claim.now).await?;
        let claimed = self.task_claim(claim).await?;
        Ok((report, claimed))
    }
    /// Puts claimed tasks back as they were before the claim, attempt not counted: a node
    /// hands back what it reserved and will not start (it is stopping, or ranks or limits
    /// changed). A task whose cancellation was asked ends `cancelled` instead, and is
    /// returned in `ended`.
    async fn task_hand_back(
        &self,
        tasks: Vec<(TaskId, i64)>,
        now: Micros,
    ) -> StoreResult<CompleteResult>;
    /// Extends the leases of a node's running tasks; returns those asked to stop.
    async fn lease_renew(&self, node: String, until: Micros) -> StoreResult<Vec<TaskId>>;
    /// Ends as `lost` the attempts whose lease expired, or all of `node`'s (a node
    /// restarting), retrying their tasks while attempts remain.
    async fn lease_rescue(&self, node: Option<String>, now: Micros) -> StoreResult<CompleteResult>;

    /// The batches a filter names, newest first: one more than its limit when more follow.
    async fn batch_list(&self, filter: BatchFilter) -> StoreResult<Vec<BatchInfo>>;
    /// A page of the tasks a filter names, newest first (one more than its limit when more
    /// follow), and how many it names in each state, each count stopping at [`COUNT_CAP`].
    async fn task_list(&self, filter: TaskFilter) -> StoreResult<TaskPage>;
    /// What each of these tasks may wait on; a task that does not exist is left out.
    async fn task_hold(&self, tasks: Vec<TaskId>) -> StoreResult<Vec<HoldFacts>>;

    /// How many tasks of the whole store are in each state: from counters and the
    /// indexes of tasks not ended, never a scan of the ended ones.
    async fn task_counts(&self) -> StoreResult<Progress>;
    /// The counts, ended totals, oldest ready task and busy groups, as cheaply.
    async fn queue_stats(&self, now: Micros) -> StoreResult<QueueStats>;
    /// The batches with most tasks not ended, at most `limit`.
    async fn batch_depths(&self, limit: usize) -> StoreResult<Vec<BatchDepth>>;
    async fn attempt_list(&self, filter: AttemptFilter) -> StoreResult<Vec<(i64, AttemptRecord)>>;
    /// What a batch's ended attempts have used, summed over its log.
    async fn batch_usage(&self, batch: BatchId) -> StoreResult<BatchUsage>;
    async fn running_list(&self) -> StoreResult<Vec<RunningTask>>;
    /// Deletes up to `chunk` ended tasks (with their attempts) that ended before `before`,
    /// and up to `chunk` idempotency keys kept before it whose batch has nothing open;
    /// returns how many of both.
    async fn prune(&self, before: Micros, chunk: usize) -> StoreResult<usize>;

    /// A consistent copy of the whole store, made while it runs, as a file already
    /// removed from its directory (it goes when the handle closes). SQLite only: a
    /// PostgreSQL store refuses, naming `pg_dump`.
    async fn backup(&self) -> StoreResult<std::fs::File>;

    /// Creates a schedule; its name must be new.
    async fn schedule_create(
        &self,
        spec: ScheduleSpec,
        next_due: Option<Micros>,
        now: Micros,
    ) -> StoreResult<ScheduleInfo>;
    /// Every schedule, by name.
    async fn schedule_list(&self) -> StoreResult<Vec<ScheduleInfo>>;
    async fn schedule_get(&self, name: String) -> StoreResult<ScheduleInfo>;
    /// A schedule's handled ticks, newest first.
    async fn schedule_ticks(&self, schedule: i64, limit: usize) -> StoreResult<Vec<Tick>>;
    /// Pauses or resumes a schedule; a resumed one waits for `next_due`.
    async fn schedule_set_paused(
        &self,
        name: String,
        paused: bool,
        next_due: Option<Micros>,
    ) -> StoreResult<ScheduleInfo>;
    /// Deletes a schedule and its ticks; the batches it opened stay.
    async fn schedule_delete(&self, name: String) -> StoreResult<()>;
    /// The schedules not paused whose next tick is due by `now`, and the earliest next
    /// tick of the others.
    async fn schedule_due(&self, now: Micros) -> StoreResult<(Vec<ScheduleInfo>, Option<Micros>)>;
    /// Handles a tick, all or nothing; `None` when another node handled it first.
    async fn schedule_fire(&self, fire: Fire) -> StoreResult<Option<Tick>>;

    /// Whether the server has a webhook of its own (`--webhook`): every batch's end and
    /// every task's final failure is then written to the outbox for it. Off until set.
    fn webhook_server(&self, on: bool);
    /// Claims up to `max` outbox events due by `now` for one try each (the server's only
    /// when `server`), counting the try and holding them until `hold_until`; another node
    /// takes an event only once that passes. Also says when the next falls due.
    async fn hook_claim(
        &self,
        now: Micros,
        hold_until: Micros,
        max: usize,
        server: bool,
    ) -> StoreResult<HookClaim>;
    /// An event delivered, or given up: it leaves the outbox.
    async fn hook_done(&self, id: i64) -> StoreResult<()>;
    /// An event whose try failed: tried again from `due`, with the body sent this time.
    async fn hook_retry(&self, id: i64, due: Micros, body: Vec<u8>) -> StoreResult<()>;

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
