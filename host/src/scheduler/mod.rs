//! The scheduler: what callers do with batches, tasks, modules and groups (checked and
//! authorized here), and the node that claims tasks and runs them ([`node`]).
//!
//! - [`admit`]: the checks every task passes before the store takes it.
//! - `request`: a task as a client asks for it, and the spec it makes.
//! - [`reads`]: what callers read: modules, batches, tasks, the execution log, groups,
//!   nodes, what runs now.
//! - [`lists`]: lists of batches and tasks, paged, with what each pending task waits on.
//! - [`module_ref`]: which module a name, digest or digest prefix names.
//! - [`rules`]: the scheduling rules as plain functions over the execution log, and what
//!   holds a pending task back.
//! - [`model`]: an executable model of the claim, that tests hold the store drivers to.
//! - [`node`]: the claim loop, the runs, the completion writer and the lease keeper.
//! - [`reserved`]: the tasks a node claimed and has not started, in claim order.
//! - [`metrics`]: latencies and outcomes the node records by module, for `/metrics`;
//!   `module_labels`: the name each module is shown by there, in the log and in traces.
//! - `keys`: a batch opened with its tasks at once, and requests done once per
//!   idempotency key; `pause`: pauses and limits changed after the fact; `redrive`:
//!   failed and cancelled tasks run again, and bulk actions.
//! - `spawn`: the children a running task submits into its batch, attenuated.
//! - `tenants`: tenants and their tokens, and the tenant a request's token speaks for.

pub mod admit;
mod grants;
mod keys;
pub mod lists;
pub mod metrics;
pub mod model;
mod module_labels;
pub mod module_ref;
pub mod node;
mod pause;
mod reads;
mod redrive;
mod request;
mod reserved;
pub mod rules;
mod schedules;
mod spawn;
mod tenants;

pub use admit::{Admitted, MAX_ATTEMPTS, MAX_GROUP_KEY, MAX_INPUT, MAX_TASKS_PER_SUBMIT};
pub use keys::{IdempotencyKey, Keyed, MAX_KEY_LEN, Opened};
pub use reads::{BatchGraph, GraphEdge, MAX_GRAPH_EDGES};
pub use redrive::FAILURES;
pub use request::TaskRequest;
pub use schedules::SchedulePlan;
pub use tenants::{NewToken, token_parts};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest as _, Sha256};
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

use crate::runtime::{Digest, LoadError, Runtime, TaskLimits, TaskModule};
use crate::store::*;

/// Who is asking: an admin may do anything; a batch handle opens only its own batch; a
/// tenant opens batches of its own and uses those alone.
#[derive(Debug, Clone)]
pub enum Access {
    Admin,
    Handle(String),
    Tenant(TenantId),
}

impl Access {
    /// The key that opens a batch to this caller; none for the admin, whom every batch
    /// opens to.
    fn batch_key(&self) -> Option<BatchKey> {
        match self {
            Access::Admin => None,
            Access::Handle(handle) => Some(BatchKey::Handle(hash_handle(handle))),
            Access::Tenant(tenant) => Some(BatchKey::Tenant(*tenant)),
        }
    }
}

/// What a handle was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    Batch(BatchId),
    Task(TaskId),
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resource::Batch(id) => write!(f, "batch {id}"),
            Resource::Task(id) => write!(f, "task {id}"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request it cannot read: a field of the wrong form, a module no name names.
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    /// Past one of a batch's quotas.
    #[error("{0}")]
    Quota(String),
    /// A handle or a tenant asked for what it does not open. It is refused alike whether
    /// what it asked for exists or not: it learns nothing of other batches.
    #[error("this credential does not open {0}")]
    Forbidden(Resource),
    #[error("internal error: {0:#}")]
    Internal(anyhow::Error),
}

impl From<StoreError> for Error {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound { .. } => Error::NotFound(err.to_string()),
            StoreError::Invalid(m) => Error::Invalid(m),
            StoreError::Conflict(m) => Error::Conflict(m),
            StoreError::Quota(m) => Error::Quota(m),
            StoreError::Forbidden(batch) => Error::Forbidden(Resource::Batch(batch)),
            StoreError::Internal(e) => Error::Internal(e),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How a node schedules.
#[derive(Debug, Clone)]
pub struct SchedulerConfig {
    /// This node's name in leases and the execution log.
    pub node: String,
    /// At most this many tasks held beyond the free slots: a node holds ahead only what
    /// keeps its slots busy through its claims (see [`node`]), and never more than this.
    /// Held tasks are `reserved`: they count against group and batch limits.
    pub prefetch: usize,
    /// How long a claim stays valid without renewal.
    pub lease: Duration,
    /// Limits of a task that sets none.
    pub default_limits: TaskLimits,
    /// Ended tasks and their attempts are deleted this long after they end.
    pub retention: Option<Duration>,
    /// How often to look for other nodes' expired leases; `None` on a single node.
    pub rescue_every: Option<Duration>,
    /// Seals the secret settings granted to batches; none: secrets are refused.
    pub secret_key: Option<crate::secrets::SecretKey>,
    /// The server's webhook, which hears of every batch's end and task's final failure.
    pub webhook: Option<crate::webhooks::ServerWebhook>,
    /// The quotas a batch opens with when its opening sets none.
    pub batch_quotas: crate::store::Quotas,
    /// The priority ceiling of a tenant that sets none of its own.
    pub tenant_max_priority: i32,
    /// The running limit a tenant gets when it is added; none: no limit.
    pub tenant_max_running: Option<u32>,
    /// The open limit a tenant gets when it is added; none: no limit.
    pub tenant_max_open: Option<u32>,
    /// The budget a tenant gets when it is added; none: no budget.
    pub tenant_budget: Option<crate::store::Budget>,
    /// The weight a tenant gets when it is added; none: the lightest.
    pub tenant_weight: Option<u32>,
}

impl SchedulerConfig {
    pub fn new(node: impl Into<String>) -> Self {
        SchedulerConfig {
            node: node.into(),
            prefetch: 4096,
            lease: Duration::from_secs(30),
            default_limits: TaskLimits::default(),
            retention: None,
            rescue_every: None,
            secret_key: None,
            webhook: None,
            // What children grow a batch by is bounded unless a caller says otherwise.
            batch_quotas: crate::store::Quotas {
                children: Some(crate::store::spawn::DEFAULT_CHILDREN),
                depth: Some(crate::store::spawn::DEFAULT_DEPTH),
                ..crate::store::Quotas::default()
            },
            tenant_max_priority: DEFAULT_MAX_PRIORITY,
            tenant_max_running: None,
            tenant_max_open: None,
            tenant_budget: None,
            tenant_weight: None,
        }
    }
}

/// A run this node holds.
pub(crate) struct LocalRun {
    pub(crate) batch: BatchId,
    pub(crate) cancel: CancellationToken,
    /// How it runs, once it has started in a slot: this node shows it running before the
    /// store has its start mark.
    pub(crate) started: Option<RunningTask>,
    /// The span of the claim that took it, which its attempt's span links to; none while
    /// traces are off.
    pub(crate) claim: Option<opentelemetry::trace::SpanContext>,
}

/// Something that happened to a batch's tasks, for waiters.
#[derive(Debug, Clone, Copy)]
pub struct BatchEvent {
    /// The batch, or [`BatchEvent::ANY`]: news may have been missed, every waiter looks.
    pub batch: BatchId,
}

impl BatchEvent {
    pub const ANY: BatchId = 0;

    pub fn concerns(&self, batch: BatchId) -> bool {
        self.batch == batch || self.batch == Self::ANY
    }
}

/// Longest module or batch name or tag, in characters.
pub const MAX_NAME: usize = 200;

pub struct Scheduler {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) runtime: Arc<Runtime>,
    pub(crate) config: SchedulerConfig,
    /// Wakes the claim loop: new work may be claimable.
    pub(crate) wake: Notify,
    /// Wakes the ticker: a schedule was created or resumed.
    pub(crate) schedules_wake: Notify,
    /// Wakes the lease keeper: a task running here may have been cancelled elsewhere.
    pub(crate) renew_now: Notify,
    /// Priorities or limits changed: reserved tasks go back to the queue.
    pub(crate) reclaim: Notify,
    /// Wakes the webhook sender: events may have been written to the outbox.
    pub(crate) hooks_wake: Notify,
    pub(crate) events: broadcast::Sender<BatchEvent>,
    started_at: Micros,
    /// Runs on this node, by task: for cancellation and the live view.
    pub(crate) running: Mutex<HashMap<TaskId, LocalRun>>,
    modules: Mutex<HashMap<Digest, Arc<TaskModule>>>,
    grants: grants::GrantCache,
    /// Keys already checked against the store, by batch: a batch's handle and tenant never
    /// change, so a caller that submits and waits is checked once, not on every request.
    /// On a store other nodes share, a release there must stop the handle here at once:
    /// requests check it against the store, and only a submission trusts this (see
    /// [`Scheduler::submit`]).
    handles: Mutex<HashMap<(BatchId, BatchKey), Option<TenantId>>>,
    /// Recent run times on this node, for how far ahead to claim.
    pub(crate) pace: node::Pace,
    pub metrics: metrics::Metrics,
    /// The names modules are shown by in the log, traces and metrics.
    pub(crate) module_labels: module_labels::ModuleLabels,
}

/// Checked handles kept before the cache starts over.
const MAX_CHECKED_HANDLES: usize = 10_000;

impl Scheduler {
    pub fn new(store: Arc<dyn Store>, runtime: Arc<Runtime>, config: SchedulerConfig) -> Arc<Self> {
        // Ends are written to the outbox for the server's webhook only while it has one.
        store.webhook_server(config.webhook.is_some());
        Arc::new(Scheduler {
            store,
            runtime,
            config,
            wake: Notify::new(),
            schedules_wake: Notify::new(),
            renew_now: Notify::new(),
            reclaim: Notify::new(),
            hooks_wake: Notify::new(),
            events: broadcast::channel(4096).0,
            started_at: now_micros(),
            running: Mutex::new(HashMap::new()),
            modules: Mutex::new(HashMap::new()),
            grants: grants::GrantCache::default(),
            handles: Mutex::new(HashMap::new()),
            pace: node::Pace::default(),
            metrics: metrics::Metrics::default(),
            module_labels: module_labels::ModuleLabels::default(),
        })
    }

    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    pub fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    pub fn subscribe(&self) -> broadcast::Receiver<BatchEvent> {
        self.events.subscribe()
    }

    pub(crate) fn notify_batch(&self, batch: BatchId) {
        let _ = self.events.send(BatchEvent { batch });
    }

    /// Validates, compiles and stores a component; a name given joins its names (moved
    /// from the module it named, if another).
    pub async fn module_add(
        &self,
        bytes: Vec<u8>,
        name: Option<String>,
        tag: Option<String>,
    ) -> Result<ModuleAdded> {
        check_name("name", name.as_deref())?;
        check_name("tag", tag.as_deref())?;
        let runtime = self.runtime.clone();
        let (bytes, module) = tokio::task::spawn_blocking(move || {
            let module = runtime.load(&bytes);
            (bytes, module)
        })
        .await
        .map_err(|e| Error::Internal(e.into()))?;
        let module = module.map_err(|e| match e {
            LoadError::Host(_) => Error::Internal(e.into()),
            refused => Error::Invalid(format!("module refused: {refused}")),
        })?;
        self.modules
            .lock()
            .expect("modules lock")
            .insert(module.digest(), module);
        let added = self
            .store
            .module_put(bytes, name, tag, now_micros())
            .await?;
        self.module_labels.forget();
        Ok(added)
    }

    /// The loaded module for a digest: from memory, else from the store.
    pub(crate) async fn module(&self, digest: Digest) -> anyhow::Result<Arc<TaskModule>> {
        if let Some(module) = self.modules.lock().expect("modules lock").get(&digest) {
            return Ok(module.clone());
        }
        let bytes = self.store.module_bytes(digest).await?;
        let runtime = self.runtime.clone();
        let module = tokio::task::spawn_blocking(move || runtime.load(&bytes)).await??;
        self.modules
            .lock()
            .expect("modules lock")
            .insert(digest, module.clone());
        Ok(module)
    }

    pub async fn module_delete(&self, digest: Digest) -> Result<()> {
        self.store.module_delete(digest).await?;
        self.modules.lock().expect("modules lock").remove(&digest);
        Ok(())
    }

    /// Removes a module's name; returns the module, which keeps its other names.
    pub async fn module_unname(&self, name: String) -> Result<Digest> {
        check_name("name", Some(&name))?;
        let digest = self.store.module_unname(name).await?;
        self.module_labels.forget();
        Ok(digest)
    }

    /// Opens a batch; returns it with its handle, the capability to use it.
    pub async fn batch_open(&self, spec: BatchSpec) -> Result<(BatchInfo, String)> {
        let opened = self.batch_create(spec, Vec::new(), None).await?;
        Ok((opened.batch, opened.handle))
    }

    /// Checks that `access` may change `batch`. A handle is refused alike for a batch that
    /// does not exist and for one it does not open.
    pub async fn authorize(&self, access: &Access, batch: BatchId) -> Result<()> {
        self.authorize_with(access, batch, !self.store.is_shared())
            .await
            .map(drop)
    }

    /// [`Scheduler::authorize`] for a submission, which may trust a handle checked before
    /// (see [`Scheduler::submit`]). Returns the tenant whose rules bind the submission:
    /// none for the admin.
    pub async fn authorize_submission(
        &self,
        access: &Access,
        batch: BatchId,
    ) -> Result<Option<TenantId>> {
        self.authorize_with(access, batch, true).await
    }

    /// [`Scheduler::authorize`], trusting a key checked before when `cached`. Returns the
    /// tenant whose rules bind what `access` does to the batch: none for the admin.
    async fn authorize_with(
        &self,
        access: &Access,
        batch: BatchId,
        cached: bool,
    ) -> Result<Option<TenantId>> {
        let Some(key) = access.batch_key() else {
            return Ok(None);
        };
        let forbidden = Error::Forbidden(Resource::Batch(batch));
        if let Access::Handle(handle) = access
            && handle_batch(handle) != Some(batch)
        {
            return Err(forbidden);
        }
        let checked = self
            .handles
            .lock()
            .expect("handles lock")
            .get(&(batch, key))
            .copied();
        if let (true, Some(tenant)) = (cached, checked) {
            return Ok(tenant);
        }
        let tenant = match self.store.batch_authorize(batch, key).await {
            Ok(tenant) => tenant,
            Err(StoreError::NotFound { .. } | StoreError::Forbidden(_)) => return Err(forbidden),
            Err(err) => return Err(err.into()),
        };
        let mut handles = self.handles.lock().expect("handles lock");
        if handles.len() >= MAX_CHECKED_HANDLES {
            handles.clear();
        }
        handles.insert((batch, key), tenant);
        Ok(tenant)
    }

    /// The batch a read or an action over many tasks is confined to: for a handle, the batch
    /// asked for, which must be its own, and its own when none is asked; for the admin,
    /// what was asked.
    pub(crate) async fn confine(
        &self,
        access: &Access,
        asked: Option<BatchId>,
    ) -> Result<Option<BatchId>> {
        let batch = match access {
            Access::Admin => return Ok(asked),
            Access::Handle(handle) => asked
                .or(handle_batch(handle))
                .ok_or(Error::Forbidden(Resource::Batch(0)))?,
            Access::Tenant(_) => asked.ok_or_else(|| {
                Error::BadRequest(
                    "parameter `batch`: a tenant's token reads and changes one batch of its \
                     own at a time here; name it (`batch=ID`)"
                        .into(),
                )
            })?,
        };
        self.authorize(access, batch).await?;
        Ok(Some(batch))
    }

    /// Submits tasks into a batch, all or none.
    pub async fn submit(
        &self,
        access: &Access,
        batch: BatchId,
        tasks: Vec<TaskSpec>,
    ) -> Result<Vec<TaskId>> {
        // A handle checked before opened the batch then, and batch ids are never used
        // again: if the batch is gone now, it was released, and the submission's own
        // transaction finds it gone. So a submission, the hot path, trusts the cache even
        // on a shared store.
        let tenant = self.authorize_with(access, batch, true).await?;
        self.check_for_tenant(tenant, None, &tasks).await?;
        let tasks = self.check_tasks(tasks)?;
        let now = now_micros();
        let ids = match self.store.task_submit(batch, tasks, now).await {
            Err(StoreError::NotFound { .. }) if !matches!(access, Access::Admin) => {
                return Err(Error::Forbidden(Resource::Batch(batch)));
            }
            ids => ids?,
        };
        self.metrics.submitted(&ids, now);
        self.wake.notify_one();
        Ok(ids)
    }

    /// Admits tasks within this server's bounds (see [`admit`]).
    pub fn check_tasks(&self, tasks: Vec<TaskSpec>) -> Result<Admitted> {
        admit::admit(self.runtime.config(), tasks)
    }

    pub async fn batch_seal(&self, access: &Access, batch: BatchId) -> Result<()> {
        self.authorize(access, batch).await?;
        self.store.batch_seal(batch).await?;
        self.notify_batch(batch);
        Ok(())
    }

    pub async fn batch_set_priority(
        &self,
        access: &Access,
        batch: BatchId,
        priority: i32,
    ) -> Result<u64> {
        let tenant = self
            .authorize_with(access, batch, !self.store.is_shared())
            .await?;
        self.check_for_tenant(tenant, Some(priority), &[]).await?;
        let changed = self.store.batch_set_priority(batch, priority).await?;
        self.reclaim.notify_one();
        Ok(changed)
    }

    /// Cancels a batch's pending tasks and stops its running ones.
    pub async fn batch_cancel(&self, access: &Access, batch: BatchId) -> Result<u64> {
        self.authorize(access, batch).await?;
        let cancelled = self.store.batch_cancel(batch, now_micros()).await?;
        // Cancelled tasks may close their orders and open the next ones: claim again.
        self.wake.notify_one();
        // And may end the batch, which its webhooks hear of.
        self.hooks_wake.notify_one();
        for run in self.running.lock().expect("running lock").values() {
            if run.batch == batch {
                run.cancel.cancel();
            }
        }
        // The lease keeper hands back the cancelled tasks this node reserved.
        self.renew_now.notify_one();
        self.notify_batch(batch);
        Ok(cancelled)
    }

    pub async fn batch_release(&self, access: &Access, batch: BatchId) -> Result<()> {
        self.authorize(access, batch).await?;
        self.store.batch_release(batch).await?;
        self.forget_handle(batch);
        Ok(())
    }

    /// The quotas a batch opens with when its opening sets none.
    pub fn batch_quotas(&self) -> crate::store::Quotas {
        self.config.batch_quotas
    }

    /// Changes a batch's quotas (the admin's to do).
    pub async fn batch_set_quotas(
        &self,
        batch: BatchId,
        change: crate::store::QuotaChange,
    ) -> Result<BatchInfo> {
        Ok(self.store.batch_set_quotas(batch, change).await?)
    }

    /// Forgets that a batch's handle was checked: the batch was released, and its handle
    /// opens nothing.
    fn forget_handle(&self, batch: BatchId) {
        self.handles
            .lock()
            .expect("handles lock")
            .retain(|(checked, _), _| *checked != batch);
    }

    /// The task, if `access` may use it. A handle is refused alike for a task that does
    /// not exist and for another batch's.
    pub async fn task_for(&self, access: &Access, task: TaskId) -> Result<TaskInfo> {
        let forbidden = || Error::Forbidden(Resource::Task(task));
        let info = match (self.store.task_get(task).await, access) {
            (Ok(info), _) => info,
            (Err(StoreError::NotFound { .. }), Access::Handle(_) | Access::Tenant(_)) => {
                return Err(forbidden());
            }
            (Err(err), _) => return Err(err.into()),
        };
        match self.authorize(access, info.batch).await {
            Err(Error::Forbidden(_)) => Err(forbidden()),
            Err(err) => Err(err),
            Ok(()) => Ok(info),
        }
    }

    pub async fn task_set_priority(
        &self,
        access: &Access,
        task: TaskId,
        priority: i32,
    ) -> Result<()> {
        let info = self.task_for(access, task).await?;
        let tenant = self.authorize_with(access, info.batch, true).await?;
        self.check_for_tenant(tenant, Some(priority), &[]).await?;
        self.store.task_set_priority(task, priority).await?;
        self.reclaim.notify_one();
        Ok(())
    }

    pub async fn task_cancel(&self, access: &Access, task: TaskId) -> Result<CancelResult> {
        let info = self.task_for(access, task).await?;
        let result = self.store.task_cancel(task, now_micros()).await?;
        // Cancelling a pending task may close its order and open the next one, or end
        // its batch.
        self.wake.notify_one();
        self.hooks_wake.notify_one();
        if result == CancelResult::Requested {
            if let Some(run) = self.running.lock().expect("running lock").get(&task) {
                run.cancel.cancel();
            }
            // The lease keeper hands it back if this node reserved it.
            self.renew_now.notify_one();
        }
        self.notify_batch(info.batch);
        Ok(result)
    }

    /// Sets a group's limit; 0 holds its tasks (as a pause does, see
    /// [`Scheduler::group_set_paused`]).
    pub async fn group_set_limit(&self, key: String, limit: u32) -> Result<()> {
        check_group_key(&key)?;
        self.store.group_set_limit(key, limit).await?;
        self.reclaim.notify_one();
        Ok(())
    }

    /// Sets a group's rate, or removes it (`None`). Claims see it at once: one removed or
    /// raised lets tasks through now, so the claim loop looks again.
    pub async fn group_set_rate(&self, key: String, rate: Option<GroupRate>) -> Result<()> {
        check_group_key(&key)?;
        if let Some(rate) = &rate {
            rate.check().map_err(Error::Invalid)?;
        }
        self.store.group_set_rate(key, rate).await?;
        self.wake.notify_one();
        Ok(())
    }
}

/// The store keeps only this hash of a handle.
pub fn hash_handle(handle: &str) -> [u8; 32] {
    Sha256::digest(handle.as_bytes()).into()
}

/// The batch a handle names (`qhb_<id>_<secret>`).
pub fn handle_batch(handle: &str) -> Option<BatchId> {
    let rest = handle.strip_prefix("qhb_")?;
    let (id, secret) = rest.split_once('_')?;
    (secret.len() == 64).then_some(())?;
    id.parse().ok()
}

fn check_group_key(key: &str) -> Result<()> {
    if !(1..=MAX_GROUP_KEY).contains(&key.chars().count()) {
        return Err(Error::Invalid(format!(
            "group key must be 1 to {MAX_GROUP_KEY} characters"
        )));
    }
    Ok(())
}

fn check_name(field: &str, value: Option<&str>) -> Result<()> {
    if let Some(value) = value
        && !(1..=MAX_NAME).contains(&value.chars().count())
    {
        return Err(Error::Invalid(format!(
            "field `{field}` must be 1 to {MAX_NAME} characters"
        )));
    }
    Ok(())
}
