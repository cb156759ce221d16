//! A store that passes every call to a real one, but fails the writes of how runs went
//! (start marks, completions, hand-backs) the way a database can: as one that is down
//! (every such write fails until it is back), or as one that refuses a record too large
//! for it (every write of a completion carrying more log than a given size fails, with
//! SQLite's own "string or blob too big"); and, on demand, fails reads of modules' bytes,
//! so that a node cannot start the tasks of a module it has not loaded yet. It counts the
//! node's upkeep (its rescues of expired leases and its prunes), and the tasks claimed in
//! a claim of their own and in a report's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use async_trait::async_trait;
use qhost::runtime::Digest;
use qhost::store::*;
use tokio::sync::{broadcast, watch};

pub struct FaultyStore {
    inner: Arc<dyn Store>,
    down: AtomicBool,
    /// Reads of modules' bytes fail.
    modules_down: AtomicBool,
    /// Completions with more bytes of log messages than this are refused.
    max_log_bytes: AtomicUsize,
    /// Writes failed so far.
    failures: watch::Sender<u64>,
    /// Calls of `lease_rescue` and of `prune` so far.
    rescues: watch::Sender<u64>,
    prunes: AtomicUsize,
    /// Tasks claimed by `task_claim`, and by `task_report_claim`.
    claimed_alone: AtomicUsize,
    claimed_in_reports: AtomicUsize,
}

impl FaultyStore {
    pub fn new(inner: Arc<dyn Store>) -> Arc<FaultyStore> {
        Arc::new(FaultyStore {
            inner,
            down: AtomicBool::new(false),
            modules_down: AtomicBool::new(false),
            max_log_bytes: AtomicUsize::new(usize::MAX),
            failures: watch::channel(0).0,
            rescues: watch::channel(0).0,
            prunes: AtomicUsize::new(0),
            claimed_alone: AtomicUsize::new(0),
            claimed_in_reports: AtomicUsize::new(0),
        })
    }

    /// Fails every write of how runs went while `down`.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// Fails every read of a module's bytes while `down`.
    pub fn set_modules_down(&self, down: bool) {
        self.modules_down.store(down, Ordering::SeqCst);
    }

    /// Refuses every completion with more than `bytes` of log messages.
    pub fn refuse_logs_over(&self, bytes: usize) {
        self.max_log_bytes.store(bytes, Ordering::SeqCst);
    }

    /// Calls of `prune` so far: each a chunk of ended work looked for.
    pub fn prunes(&self) -> usize {
        self.prunes.load(Ordering::SeqCst)
    }

    /// Waits until the store has been asked at least `count` times to rescue expired
    /// leases.
    pub async fn rescued(&self, count: u64) {
        let mut rescues = self.rescues.subscribe();
        let _ = rescues.wait_for(|n| *n >= count).await;
    }

    /// Tasks claimed so far: in a claim of their own, and in a report's.
    pub fn claimed(&self) -> (usize, usize) {
        (
            self.claimed_alone.load(Ordering::SeqCst),
            self.claimed_in_reports.load(Ordering::SeqCst),
        )
    }

    /// Writes failed so far.
    pub fn failures(&self) -> u64 {
        *self.failures.borrow()
    }

    /// Waits until at least `count` writes have failed.
    pub async fn failed(&self, count: u64) {
        let mut failures = self.failures.subscribe();
        failures.wait_for(|n| *n >= count).await.unwrap();
    }

    fn check(&self, completions: &[Completion]) -> StoreResult<()> {
        let err = if self.down.load(Ordering::SeqCst) {
            StoreError::Internal(anyhow::anyhow!("connection refused: the database is down"))
        } else if completions.iter().any(|c| {
            c.logs.iter().map(|l| l.message.len()).sum::<usize>()
                > self.max_log_bytes.load(Ordering::SeqCst)
        }) {
            let too_big = rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_TOOBIG),
                Some("string or blob too big".into()),
            );
            StoreError::Internal(anyhow::Error::new(too_big))
        } else {
            return Ok(());
        };
        self.failures.send_modify(|n| *n += 1);
        Err(err)
    }
}

#[async_trait]
impl Store for FaultyStore {
    async fn task_start(&self, starts: Vec<Start>) -> StoreResult<()> {
        self.check(&[])?;
        self.inner.task_start(starts).await
    }

    async fn task_complete(
        &self,
        completions: Vec<Completion>,
        now: Micros,
    ) -> StoreResult<CompleteResult> {
        self.check(&completions)?;
        self.inner.task_complete(completions, now).await
    }

    async fn task_report(
        &self,
        starts: Vec<Start>,
        completions: Vec<Completion>,
        now: Micros,
    ) -> StoreResult<CompleteResult> {
        self.check(&completions)?;
        self.inner.task_report(starts, completions, now).await
    }

    fn claims_in_reports(&self) -> bool {
        self.inner.claims_in_reports()
    }

    async fn task_report_claim(
        &self,
        starts: Vec<Start>,
        completions: Vec<Completion>,
        claim: ClaimParams,
    ) -> StoreResult<(CompleteResult, Claimed)> {
        self.check(&completions)?;
        let (report, claimed) = self
            .inner
            .task_report_claim(starts, completions, claim)
            .await?;
        self.claimed_in_reports
            .fetch_add(claimed.tasks.len(), Ordering::SeqCst);
        Ok((report, claimed))
    }

    async fn task_claim(&self, params: ClaimParams) -> StoreResult<Claimed> {
        let claimed = self.inner.task_claim(params).await?;
        self.claimed_alone
            .fetch_add(claimed.tasks.len(), Ordering::SeqCst);
        Ok(claimed)
    }

    async fn task_hand_back(
        &self,
        tasks: Vec<(TaskId, i64)>,
        now: Micros,
    ) -> StoreResult<CompleteResult> {
        self.check(&[])?;
        self.inner.task_hand_back(tasks, now).await
    }

    // Everything else as the real store does it.

    async fn module_put(
        &self,
        bytes: Vec<u8>,
        name: Option<String>,
        tag: Option<String>,
        now: Micros,
    ) -> StoreResult<ModuleAdded> {
        self.inner.module_put(bytes, name, tag, now).await
    }
    async fn module_unname(&self, name: String) -> StoreResult<Digest> {
        self.inner.module_unname(name).await
    }
    async fn module_bytes(&self, digest: Digest) -> StoreResult<Vec<u8>> {
        if self.modules_down.load(Ordering::SeqCst) {
            return Err(StoreError::Internal(anyhow::anyhow!(
                "connection refused: the database is down"
            )));
        }
        self.inner.module_bytes(digest).await
    }
    async fn module_list(&self) -> StoreResult<Vec<ModuleInfo>> {
        self.inner.module_list().await
    }
    async fn module_lookup(&self, names: Vec<String>) -> StoreResult<Vec<(String, Digest)>> {
        self.inner.module_lookup(names).await
    }
    async fn module_delete(&self, digest: Digest) -> StoreResult<()> {
        self.inner.module_delete(digest).await
    }
    async fn batch_open(
        &self,
        spec: BatchSpec,
        handle_hash: [u8; 32],
        now: Micros,
    ) -> StoreResult<BatchInfo> {
        self.inner.batch_open(spec, handle_hash, now).await
    }
    async fn batch_set_handle(&self, batch: BatchId, handle_hash: [u8; 32]) -> StoreResult<()> {
        self.inner.batch_set_handle(batch, handle_hash).await
    }
    async fn batch_edges(
        &self,
        batch: BatchId,
        limit: usize,
    ) -> StoreResult<Vec<(TaskId, TaskId)>> {
        self.inner.batch_edges(batch, limit).await
    }
    async fn batch_get(&self, batch: BatchId) -> StoreResult<BatchInfo> {
        self.inner.batch_get(batch).await
    }

    async fn batch_grant(&self, batch: BatchId) -> StoreResult<Grant> {
        self.inner.batch_grant(batch).await
    }

    async fn grant_secret_sample(&self) -> StoreResult<Option<Setting>> {
        self.inner.grant_secret_sample().await
    }
    async fn batch_open_count(&self, batch: BatchId) -> StoreResult<u64> {
        self.inner.batch_open_count(batch).await
    }
    async fn batch_authorize(
        &self,
        batch: BatchId,
        key: BatchKey,
    ) -> StoreResult<Option<TenantId>> {
        self.inner.batch_authorize(batch, key).await
    }
    async fn tenant_add(&self, name: String, now: Micros) -> StoreResult<TenantInfo> {
        self.inner.tenant_add(name, now).await
    }
    async fn tenant_list(&self) -> StoreResult<Vec<TenantInfo>> {
        self.inner.tenant_list().await
    }
    async fn tenant_get(&self, tenant: TenantId) -> StoreResult<TenantInfo> {
        self.inner.tenant_get(tenant).await
    }

    async fn tenant_lower_priorities(&self, tenant: TenantId, ceiling: i32) -> StoreResult<u64> {
        self.inner.tenant_lower_priorities(tenant, ceiling).await
    }

    async fn tenant_rules(
        &self,
        tenant: TenantId,
        server_max_priority: i32,
    ) -> StoreResult<TenantRules> {
        self.inner.tenant_rules(tenant, server_max_priority).await
    }
    async fn tenant_set(
        &self,
        name: String,
        change: TenantChange,
        now: Micros,
    ) -> StoreResult<TenantInfo> {
        self.inner.tenant_set(name, change, now).await
    }
    async fn token_add(
        &self,
        tenant: String,
        secret_hash: [u8; 32],
        now: Micros,
    ) -> StoreResult<TokenInfo> {
        self.inner.token_add(tenant, secret_hash, now).await
    }
    async fn token_list(&self, tenant: String) -> StoreResult<Vec<TokenInfo>> {
        self.inner.token_list(tenant).await
    }
    async fn token_revoke(
        &self,
        tenant: String,
        token: i64,
        now: Micros,
    ) -> StoreResult<TokenInfo> {
        self.inner.token_revoke(tenant, token, now).await
    }
    async fn token_check(&self, token: i64, secret_hash: [u8; 32]) -> StoreResult<TenantId> {
        self.inner.token_check(token, secret_hash).await
    }
    async fn batch_tenant(&self, batch: BatchId) -> StoreResult<Option<TenantId>> {
        self.inner.batch_tenant(batch).await
    }
    async fn batch_seal(&self, batch: BatchId) -> StoreResult<()> {
        self.inner.batch_seal(batch).await
    }
    async fn batch_set_priority(&self, batch: BatchId, priority: i32) -> StoreResult<u64> {
        self.inner.batch_set_priority(batch, priority).await
    }
    async fn batch_cancel(&self, batch: BatchId, now: Micros) -> StoreResult<u64> {
        self.inner.batch_cancel(batch, now).await
    }
    async fn batch_release(&self, batch: BatchId) -> StoreResult<()> {
        self.inner.batch_release(batch).await
    }
    async fn batch_set_quotas(
        &self,
        batch: BatchId,
        change: QuotaChange,
    ) -> StoreResult<BatchInfo> {
        self.inner.batch_set_quotas(batch, change).await
    }
    async fn task_submit(
        &self,
        batch: BatchId,
        tasks: Admitted,
        now: Micros,
    ) -> StoreResult<Vec<TaskId>> {
        self.inner.task_submit(batch, tasks, now).await
    }
    async fn task_get(&self, task: TaskId) -> StoreResult<TaskInfo> {
        self.inner.task_get(task).await
    }
    async fn task_output(&self, task: TaskId) -> StoreResult<Option<Vec<u8>>> {
        self.inner.task_output(task).await
    }
    async fn task_input(&self, task: TaskId) -> StoreResult<Vec<u8>> {
        self.inner.task_input(task).await
    }
    async fn task_inputs(&self, task: TaskId) -> StoreResult<Vec<Input>> {
        self.inner.task_inputs(task).await
    }
    async fn task_set_priority(&self, task: TaskId, priority: i32) -> StoreResult<()> {
        self.inner.task_set_priority(task, priority).await
    }
    async fn task_cancel(&self, task: TaskId, now: Micros) -> StoreResult<CancelResult> {
        self.inner.task_cancel(task, now).await
    }
    async fn group_set_limit(&self, key: String, limit: u32) -> StoreResult<()> {
        self.inner.group_set_limit(key, limit).await
    }

    async fn group_set_rate(&self, key: String, rate: Option<GroupRate>) -> StoreResult<()> {
        self.inner.group_set_rate(key, rate).await
    }
    async fn group_get(&self, key: String) -> StoreResult<GroupInfo> {
        self.inner.group_get(key).await
    }
    async fn group_list(
        &self,
        after: String,
        batch: Option<BatchId>,
        limit: usize,
    ) -> StoreResult<Vec<GroupRow>> {
        self.inner.group_list(after, batch, limit).await
    }
    async fn group_set_paused(&self, key: String, paused: bool) -> StoreResult<()> {
        self.inner.group_set_paused(key, paused).await
    }
    async fn batch_set_paused(&self, batch: BatchId, paused: bool) -> StoreResult<()> {
        self.inner.batch_set_paused(batch, paused).await
    }
    async fn batch_set_max_parallel(
        &self,
        batch: BatchId,
        max_parallel: Option<u32>,
    ) -> StoreResult<()> {
        self.inner.batch_set_max_parallel(batch, max_parallel).await
    }
    async fn task_retry(&self, select: TaskSelect) -> StoreResult<u64> {
        self.inner.task_retry(select).await
    }
    async fn task_cancel_where(&self, select: TaskSelect, now: Micros) -> StoreResult<BulkCancel> {
        self.inner.task_cancel_where(select, now).await
    }
    async fn task_set_priority_where(&self, select: TaskSelect, priority: i32) -> StoreResult<u64> {
        self.inner.task_set_priority_where(select, priority).await
    }
    async fn batch_create(&self, new: NewBatch, now: Micros) -> StoreResult<Answer<Created>> {
        self.inner.batch_create(new, now).await
    }
    async fn task_submit_keyed(
        &self,
        batch: BatchId,
        tasks: Admitted,
        key: RequestKey,
        now: Micros,
    ) -> StoreResult<Answer<Vec<TaskId>>> {
        self.inner.task_submit_keyed(batch, tasks, key, now).await
    }
    async fn lease_renew(&self, node: String, until: Micros) -> StoreResult<Vec<TaskId>> {
        self.inner.lease_renew(node, until).await
    }
    async fn lease_rescue(&self, node: Option<String>, now: Micros) -> StoreResult<CompleteResult> {
        let result = self.inner.lease_rescue(node, now).await;
        self.rescues.send_modify(|n| *n += 1);
        result
    }
    fn webhook_server(&self, on: bool) {
        self.inner.webhook_server(on)
    }
    async fn hook_claim(
        &self,
        now: Micros,
        hold_until: Micros,
        max: usize,
        server: bool,
    ) -> StoreResult<HookClaim> {
        self.inner.hook_claim(now, hold_until, max, server).await
    }
    async fn hook_done(&self, id: i64) -> StoreResult<()> {
        self.inner.hook_done(id).await
    }
    async fn hook_retry(&self, id: i64, due: Micros, body: Vec<u8>) -> StoreResult<()> {
        self.inner.hook_retry(id, due, body).await
    }
    async fn batch_list(&self, filter: BatchFilter) -> StoreResult<Vec<BatchInfo>> {
        self.inner.batch_list(filter).await
    }
    async fn task_list(&self, filter: TaskFilter) -> StoreResult<TaskPage> {
        self.inner.task_list(filter).await
    }
    async fn task_hold(&self, tasks: Vec<TaskId>) -> StoreResult<Vec<HoldFacts>> {
        self.inner.task_hold(tasks).await
    }
    async fn task_counts(&self) -> StoreResult<Progress> {
        self.inner.task_counts().await
    }
    async fn queue_stats(&self, now: Micros) -> StoreResult<QueueStats> {
        self.inner.queue_stats(now).await
    }
    async fn batch_depths(&self, limit: usize) -> StoreResult<Vec<BatchDepth>> {
        self.inner.batch_depths(limit).await
    }
    async fn attempt_list(&self, filter: AttemptFilter) -> StoreResult<Vec<(i64, AttemptRecord)>> {
        self.inner.attempt_list(filter).await
    }
    async fn batch_usage(&self, batch: BatchId) -> StoreResult<BatchUsage> {
        self.inner.batch_usage(batch).await
    }
    async fn running_list(&self) -> StoreResult<Vec<RunningTask>> {
        self.inner.running_list().await
    }
    async fn schedule_create(
        &self,
        spec: ScheduleSpec,
        next_due: Option<Micros>,
        now: Micros,
    ) -> StoreResult<ScheduleInfo> {
        self.inner.schedule_create(spec, next_due, now).await
    }
    async fn schedule_list(&self) -> StoreResult<Vec<ScheduleInfo>> {
        self.inner.schedule_list().await
    }
    async fn schedule_get(&self, name: String) -> StoreResult<ScheduleInfo> {
        self.inner.schedule_get(name).await
    }
    async fn schedule_ticks(&self, schedule: i64, limit: usize) -> StoreResult<Vec<Tick>> {
        self.inner.schedule_ticks(schedule, limit).await
    }
    async fn schedule_set_paused(
        &self,
        name: String,
        paused: bool,
        next_due: Option<Micros>,
    ) -> StoreResult<ScheduleInfo> {
        self.inner.schedule_set_paused(name, paused, next_due).await
    }
    async fn schedule_delete(&self, name: String) -> StoreResult<()> {
        self.inner.schedule_delete(name).await
    }
    async fn schedule_due(&self, now: Micros) -> StoreResult<(Vec<ScheduleInfo>, Option<Micros>)> {
        self.inner.schedule_due(now).await
    }
    async fn schedule_fire(&self, fire: Fire) -> StoreResult<Option<Tick>> {
        self.inner.schedule_fire(fire).await
    }
    async fn prune(&self, before: Micros, chunk: usize) -> StoreResult<usize> {
        self.prunes.fetch_add(1, Ordering::SeqCst);
        self.inner.prune(before, chunk).await
    }
    async fn backup(&self) -> StoreResult<std::fs::File> {
        self.inner.backup().await
    }
    fn signals(&self) -> Option<broadcast::Receiver<Signal>> {
        self.inner.signals()
    }
    fn is_shared(&self) -> bool {
        self.inner.is_shared()
    }
    async fn node_beat(&self, beat: NodeBeat) -> StoreResult<()> {
        self.inner.node_beat(beat).await
    }
    async fn node_list(&self) -> StoreResult<Vec<NodeInfo>> {
        self.inner.node_list().await
    }
    async fn node_remove(&self, node: String) -> StoreResult<()> {
        self.inner.node_remove(node).await
    }
}
