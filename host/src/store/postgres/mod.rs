//! The PostgreSQL driver: several nodes share one database, and PostgreSQL is the
//! distributed engine (row locks, advisory locks, LISTEN/NOTIFY); there is no coordinator.
//!
//! - Claims lock what they take with `FOR UPDATE SKIP LOCKED`: ready tasks, and the group
//!   and batch counters they consume, in the same transaction, so two nodes never both
//!   take the last slot of a group, and a claim never waits on another node's locks
//!   (a locked task or counter is passed over, and claimed on the next wake-up).
//! - A batch's gate changes (submission, the end of an order, cancellation) hold an
//!   exclusive advisory lock on the batch; claims hold a shared one, tried without
//!   waiting. That makes "no order lower than a started one" exact across nodes.
//! - Writes that make work claimable or end tasks send a `NOTIFY` that wakes the other
//!   nodes' claim loops and batch waiters ([`Signal`]).
//! - Times are on the database's clock: a node measures its own clock's offset when it
//!   connects and at each heartbeat, and corrects every time it passes in.
//! - Durability: what callers are told is stored commits with `synchronous_commit = on`;
//!   claims, completions and lease renewals commit with it `off` (a database crash can
//!   undo their last moments, which re-runs those tasks: tasks run at least once), as
//!   the SQLite driver does.
//!
//! Where things are: `modules.rs`, `batches.rs`, `tasks.rs` (submission, cancellation,
//! priority, groups), `pause.rs` (pauses, limits changed after the fact), `redrive.rs`
//! (re-drive, and bulk cancel and priority), `keys.rs` (a batch opened with its tasks at
//! once, idempotency keys), `claim.rs`, `complete.rs` (completion, retry, rescue, hand-back,
//! lease renewal), `lists.rs` (lists of batches and tasks, what a task waits on), `log.rs`
//! (attempt records, the running view, pruning), `stats.rs` (the queue at a glance),
//! `nodes.rs`, `gate.rs` (ordering gates), `notifier.rs` (LISTEN/NOTIFY) and `schema.rs`
//! (pools, migrations). Statements longer than a line or two are in `sql/`, each headed by
//! what it does and what its parameters are; the migrations are in `migrations/`. This
//! file holds the store, its transactions, and the [`Store`] methods, each a call into
//! one of those files.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use anyhow::Context;
use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Pool};
use tokio::sync::broadcast;
use tokio_postgres::error::SqlState;

use super::*;
pub use log::attempt_page_sql;
pub use schema::{MIGRATION_LOCK, create_schema, drop_schema, redact};
use schema::{measure_clock_offset, migrate, pool};

pub struct PostgresStore {
    /// Connections committing what callers are told is stored.
    durable: Pool,
    /// Connections committing the scheduler's bookkeeping (`synchronous_commit = off`).
    bookkeeping: Pool,
    node: String,
    channel: String,
    /// The database's clock minus this node's, microseconds.
    clock_offset: AtomicI64,
    /// Whether this node has the server's webhook ([`Store::webhook_server`]).
    server_hook: AtomicBool,
    signals: broadcast::Sender<Signal>,
    /// Whether the listener is listening now.
    listening: tokio::sync::watch::Receiver<bool>,
    listener: tokio::task::JoinHandle<()>,
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

/// How a write commits: see the module documentation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Commit {
    Durable,
    Bookkeeping,
}

/// Runs `$body` in one transaction on a connection from the pool `$commit` names, and
/// commits it. Its `BEGIN` shares the body's first round trip (`open_tx.rs`). A
/// transaction that lost a deadlock or a serialization conflict (rare: claims never wait)
/// is run again from the start.
macro_rules! transaction {
    ($store:expr, $commit:expr, |$tx:ident| $body:block) => {{
        let mut tries = 0u32;
        loop {
            let open = $crate::store::postgres::open_tx::OpenTx::new($store.client($commit).await?);
            let $tx = open.client();
            // `BEGIN` is polled first, so it goes out ahead of the body's statements.
            let (begun, result): (_, $crate::store::StoreResult<_>) =
                futures_util::future::join(open.begin(), async { $body }).await;
            let result = match (begun, result) {
                (Ok(()), Ok(value)) => open
                    .commit()
                    .await
                    .map(|()| value)
                    .map_err($crate::store::postgres::pg),
                // A `BEGIN` refused means a broken connection: dropped, it is closed.
                (Err(err), _) => Err($crate::store::postgres::pg(err)),
                (Ok(()), Err(err)) => {
                    // Rolled back before the caller hears of the failure: dropping the
                    // transaction would leave its locks (a batch's gate) held meanwhile.
                    open.rollback().await;
                    Err(err)
                }
            };
            match result {
                Err(err) if tries < 10 && $crate::store::postgres::is_transient(&err) => {
                    tries += 1;
                    tracing::debug!("transaction retried: {err}");
                    continue;
                }
                other => break other,
            }
        }
    }};
}

// The driver's files, declared after `transaction!` so that they can use it.
mod batches;
mod cached;
mod claim;
mod complete;
mod gate;
mod grants;
mod graph;
mod hooks;
#[doc(hidden)]
pub mod hot;
mod keys;
mod list_counts;
mod lists;
mod log;
mod modules;
mod nodes;
mod notifier;
mod open_tx;
mod pause;
#[cfg(test)]
mod prepared;
mod quotas;
mod redrive;
mod schedules;
mod schema;
mod share;
mod spawn;
mod stats;
mod tasks;
mod tenants;

impl PostgresStore {
    /// Connects to the database at `url` (a `postgres://` URL; `?options=-csearch_path%3DNAME`
    /// selects a schema), creating and migrating the schema if needed. `node` names this
    /// node in notifications.
    pub async fn connect(url: &str, node: &str) -> anyhow::Result<Self> {
        let config: tokio_postgres::Config = url
            .parse()
            .with_context(|| format!("the database URL {}", redact(url)))?;
        let durable = pool(config.clone(), 16)?;
        let mut quick = config.clone();
        let options = format!(
            "{} -c synchronous_commit=off",
            config.get_options().unwrap_or_default()
        );
        quick.options(options.trim());
        let bookkeeping = pool(quick, 8)?;

        let mut client = durable
            .get()
            .await
            .with_context(|| format!("connecting to {}", redact(url)))?;
        migrate(&mut client).await.context("migrating the schema")?;
        let schema: String = client
            .query_one("SELECT current_schema()", &[])
            .await?
            .get(0);
        let offset = measure_clock_offset(&client).await?;
        drop(client);

        let channel = format!("qhost:{schema}");
        let (signals, _) = broadcast::channel(1024);
        let (listening_tx, listening) = tokio::sync::watch::channel(false);
        let listener = tokio::spawn(notifier::listen(
            config,
            channel.clone(),
            node.to_owned(),
            signals.clone(),
            listening_tx,
        ));
        Ok(PostgresStore {
            durable,
            bookkeeping,
            node: node.to_owned(),
            channel,
            clock_offset: AtomicI64::new(offset),
            server_hook: AtomicBool::new(false),
            signals,
            listening,
            listener,
        })
    }

    async fn client(&self, commit: Commit) -> StoreResult<deadpool_postgres::Object> {
        let pool = match commit {
            Commit::Durable => &self.durable,
            Commit::Bookkeeping => &self.bookkeeping,
        };
        pool.get()
            .await
            .context("getting a database connection")
            .map_err(StoreError::Internal)
    }

    /// A time from this node's clock on the database's clock.
    fn db_time(&self, local: Micros) -> Micros {
        local.saturating_add(self.clock_offset.load(Ordering::Relaxed))
    }

    fn local_time(&self, db: Micros) -> Micros {
        db.saturating_sub(self.clock_offset.load(Ordering::Relaxed))
    }

    fn server_hook(&self) -> bool {
        self.server_hook.load(Ordering::Relaxed)
    }
}

pub(super) fn pg(err: tokio_postgres::Error) -> StoreError {
    StoreError::Internal(anyhow::Error::new(err))
}

/// Whether `err` is PostgreSQL refusing a value: a data exception (class 22: not valid
/// for its column, or too long) or a program limit exceeded (class 54: too large).
pub(super) fn is_refusal(err: &(dyn std::error::Error + 'static)) -> bool {
    err.downcast_ref::<tokio_postgres::Error>()
        .and_then(|e| e.code())
        .is_some_and(|code| code.code().starts_with("22") || code.code().starts_with("54"))
}

/// A deadlock or serialization failure: the transaction may simply be run again.
fn is_transient(err: &StoreError) -> bool {
    let StoreError::Internal(err) = err else {
        return false;
    };
    err.downcast_ref::<tokio_postgres::Error>()
        .and_then(|e| e.code())
        .is_some_and(|code| {
            *code == SqlState::T_R_DEADLOCK_DETECTED || *code == SqlState::T_R_SERIALIZATION_FAILURE
        })
}

fn not_found(what: &'static str, id: impl ToString) -> StoreError {
    StoreError::NotFound {
        what,
        id: id.to_string(),
    }
}

fn digest_of(text: &str) -> Digest {
    Digest::from_hex(text).unwrap_or(Digest([0; 32]))
}

fn to_i32(value: u32) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

#[async_trait]
impl Store for PostgresStore {
    async fn module_put(
        &self,
        bytes: Vec<u8>,
        name: Option<String>,
        tag: Option<String>,
        now: Micros,
    ) -> StoreResult<ModuleAdded> {
        modules::put(self, bytes, name, tag, now).await
    }

    async fn module_bytes(&self, digest: Digest) -> StoreResult<Vec<u8>> {
        modules::bytes(self, digest).await
    }

    async fn tenant_add(&self, name: String, now: Micros) -> StoreResult<TenantInfo> {
        tenants::add(self, name, now).await
    }

    async fn tenant_list(&self) -> StoreResult<Vec<TenantInfo>> {
        tenants::list(self).await
    }

    async fn tenant_get(&self, tenant: TenantId) -> StoreResult<TenantInfo> {
        tenants::get(self, tenant).await
    }

    async fn tenant_rules(
        &self,
        tenant: TenantId,
        server_max_priority: i32,
    ) -> StoreResult<TenantRules> {
        tenants::rules(self, tenant, server_max_priority).await
    }

    async fn tenant_set(
        &self,
        name: String,
        change: TenantChange,
        now: Micros,
    ) -> StoreResult<TenantInfo> {
        tenants::set(self, name, change, self.db_time(now)).await
    }

    async fn tenant_lower_priorities(&self, tenant: TenantId, ceiling: i32) -> StoreResult<u64> {
        tenants::lower_priorities(self, tenant, ceiling).await
    }

    async fn token_add(
        &self,
        tenant: String,
        secret_hash: [u8; 32],
        now: Micros,
    ) -> StoreResult<TokenInfo> {
        tenants::token_add(self, tenant, secret_hash, now).await
    }

    async fn token_list(&self, tenant: String) -> StoreResult<Vec<TokenInfo>> {
        tenants::token_list(self, tenant).await
    }

    async fn token_revoke(
        &self,
        tenant: String,
        token: i64,
        now: Micros,
    ) -> StoreResult<TokenInfo> {
        tenants::token_revoke(self, tenant, token, now).await
    }

    async fn token_check(&self, token: i64, secret_hash: [u8; 32]) -> StoreResult<TenantId> {
        tenants::token_check(self, token, secret_hash).await
    }

    async fn module_list(&self) -> StoreResult<Vec<ModuleInfo>> {
        modules::list(self).await
    }

    async fn module_lookup(&self, names: Vec<String>) -> StoreResult<Vec<(String, Digest)>> {
        modules::lookup(self, names).await
    }

    async fn module_delete(&self, digest: Digest) -> StoreResult<()> {
        modules::delete(self, digest).await
    }

    async fn module_unname(&self, name: String) -> StoreResult<Digest> {
        modules::unname(self, name).await
    }

    async fn batch_open(
        &self,
        spec: BatchSpec,
        handle_hash: [u8; 32],
        now: Micros,
    ) -> StoreResult<BatchInfo> {
        batches::open(self, spec, handle_hash, now).await
    }

    async fn batch_set_handle(&self, batch: BatchId, handle_hash: [u8; 32]) -> StoreResult<()> {
        batches::set_handle(self, batch, handle_hash).await
    }

    async fn batch_edges(
        &self,
        batch: BatchId,
        limit: usize,
    ) -> StoreResult<Vec<(TaskId, TaskId)>> {
        graph::edges(self, batch, limit).await
    }

    async fn batch_get(&self, batch: BatchId) -> StoreResult<BatchInfo> {
        batches::get(self, batch).await
    }

    async fn batch_grant(&self, batch: BatchId) -> StoreResult<Grant> {
        grants::get(self, batch).await
    }

    async fn grant_secret_sample(&self) -> StoreResult<Option<Setting>> {
        grants::secret_sample(self).await
    }

    async fn batch_open_count(&self, batch: BatchId) -> StoreResult<u64> {
        batches::open_count(self, batch).await
    }

    async fn batch_authorize(
        &self,
        batch: BatchId,
        key: BatchKey,
    ) -> StoreResult<Option<TenantId>> {
        batches::authorize(self, batch, key).await
    }

    async fn batch_tenant(&self, batch: BatchId) -> StoreResult<Option<TenantId>> {
        batches::tenant(self, batch).await
    }

    async fn batch_seal(&self, batch: BatchId) -> StoreResult<()> {
        batches::seal(self, batch).await
    }

    async fn batch_set_priority(&self, batch: BatchId, priority: i32) -> StoreResult<u64> {
        batches::set_priority(self, batch, priority).await
    }

    async fn batch_cancel(&self, batch: BatchId, now: Micros) -> StoreResult<u64> {
        batches::cancel(self, batch, now).await
    }

    async fn batch_release(&self, batch: BatchId) -> StoreResult<()> {
        batches::release(self, batch).await
    }

    async fn batch_set_quotas(
        &self,
        batch: BatchId,
        change: QuotaChange,
    ) -> StoreResult<BatchInfo> {
        transaction!(self, Commit::Durable, |tx| {
            quotas::set(tx, batch, change).await?;
            batches::info(tx, batch).await
        })
    }

    async fn task_submit(
        &self,
        batch: BatchId,
        tasks: Admitted,
        now: Micros,
    ) -> StoreResult<Vec<TaskId>> {
        tasks::submit(self, batch, tasks, now).await
    }

    async fn task_get(&self, task: TaskId) -> StoreResult<TaskInfo> {
        tasks::get(self, task).await
    }

    async fn task_output(&self, task: TaskId) -> StoreResult<Option<Vec<u8>>> {
        tasks::output(self, task).await
    }

    async fn task_input(&self, task: TaskId) -> StoreResult<Vec<u8>> {
        tasks::input(self, task).await
    }

    async fn task_inputs(&self, task: TaskId) -> StoreResult<Vec<Input>> {
        graph::inputs(self, task).await
    }

    async fn task_spawn(
        &self,
        parent: TaskId,
        child: Admitted,
        now: Micros,
    ) -> StoreResult<TaskId> {
        spawn::submit(self, parent, child, now).await
    }

    async fn task_saved(&self, task: TaskId) -> StoreResult<Option<Vec<u8>>> {
        spawn::saved(self, task).await
    }

    async fn task_set_priority(&self, task: TaskId, priority: i32) -> StoreResult<()> {
        tasks::set_priority(self, task, priority).await
    }

    async fn task_cancel(&self, task: TaskId, now: Micros) -> StoreResult<CancelResult> {
        tasks::cancel(self, task, now).await
    }

    async fn group_set_limit(&self, key: String, limit: u32) -> StoreResult<()> {
        pause::group_set_limit(self, key, limit).await
    }

    async fn group_set_paused(&self, key: String, paused: bool) -> StoreResult<()> {
        pause::group_set_paused(self, key, paused).await
    }

    async fn group_set_rate(&self, key: String, rate: Option<GroupRate>) -> StoreResult<()> {
        pause::group_set_rate(self, key, rate).await
    }

    async fn batch_set_paused(&self, batch: BatchId, paused: bool) -> StoreResult<()> {
        pause::batch_set_paused(self, batch, paused).await
    }

    async fn batch_set_max_parallel(
        &self,
        batch: BatchId,
        max_parallel: Option<u32>,
    ) -> StoreResult<()> {
        pause::batch_set_max_parallel(self, batch, max_parallel).await
    }

    async fn task_retry(&self, select: TaskSelect) -> StoreResult<u64> {
        redrive::retry(self, select).await
    }

    async fn task_cancel_where(&self, select: TaskSelect, now: Micros) -> StoreResult<BulkCancel> {
        redrive::cancel(self, select, now).await
    }

    async fn task_set_priority_where(&self, select: TaskSelect, priority: i32) -> StoreResult<u64> {
        redrive::set_priority(self, select, priority).await
    }

    async fn batch_create(&self, new: NewBatch, now: Micros) -> StoreResult<Answer<Created>> {
        keys::create(self, new, now).await
    }

    async fn task_submit_keyed(
        &self,
        batch: BatchId,
        tasks: Admitted,
        key: RequestKey,
        now: Micros,
    ) -> StoreResult<Answer<Vec<TaskId>>> {
        keys::submit(self, batch, tasks, key, now).await
    }

    async fn group_get(&self, key: String) -> StoreResult<GroupInfo> {
        tasks::group_get(self, key).await
    }

    async fn group_list(
        &self,
        after: String,
        batch: Option<BatchId>,
        limit: usize,
    ) -> StoreResult<Vec<GroupRow>> {
        tasks::group_list(self, after, batch, limit).await
    }

    async fn task_claim(&self, params: ClaimParams) -> StoreResult<Claimed> {
        claim::claim(self, params).await
    }

    async fn task_complete(
        &self,
        completions: Vec<Completion>,
        now: Micros,
    ) -> StoreResult<CompleteResult> {
        complete::complete(self, completions, now).await
    }

    async fn task_start(&self, starts: Vec<Start>) -> StoreResult<()> {
        claim::start(self, starts).await
    }

    async fn task_report(
        &self,
        starts: Vec<Start>,
        completions: Vec<Completion>,
        now: Micros,
    ) -> StoreResult<CompleteResult> {
        // Two transactions, as before: one measured no faster here, and it would hold the
        // start marks' lease rows locked while the ends lock counters.
        if !starts.is_empty() {
            claim::start(self, starts).await?;
        }
        if completions.is_empty() {
            return Ok(CompleteResult::default());
        }
        complete::complete(self, completions, now).await
    }

    async fn task_hand_back(
        &self,
        tasks: Vec<(TaskId, i64)>,
        now: Micros,
    ) -> StoreResult<CompleteResult> {
        complete::hand_back(self, tasks, now).await
    }

    async fn lease_renew(&self, node: String, until: Micros) -> StoreResult<Vec<TaskId>> {
        complete::renew(self, node, until).await
    }

    async fn lease_rescue(&self, node: Option<String>, now: Micros) -> StoreResult<CompleteResult> {
        complete::rescue(self, node, now).await
    }

    fn webhook_server(&self, on: bool) {
        self.server_hook.store(on, Ordering::Relaxed);
    }

    async fn hook_claim(
        &self,
        now: Micros,
        hold_until: Micros,
        max: usize,
        server: bool,
    ) -> StoreResult<HookClaim> {
        hooks::claim(self, now, hold_until, max, server).await
    }

    async fn hook_done(&self, id: i64) -> StoreResult<()> {
        hooks::done(self, id).await
    }

    async fn hook_retry(&self, id: i64, due: Micros, body: Vec<u8>) -> StoreResult<()> {
        hooks::retry(self, id, due, body).await
    }

    async fn batch_list(&self, filter: BatchFilter) -> StoreResult<Vec<BatchInfo>> {
        lists::batches(self, filter).await
    }

    async fn task_list(&self, filter: TaskFilter) -> StoreResult<TaskPage> {
        let now = self.db_time(filter.now);
        lists::tasks(self, TaskFilter { now, ..filter }).await
    }

    async fn task_hold(&self, tasks: Vec<TaskId>) -> StoreResult<Vec<HoldFacts>> {
        lists::hold(self, &tasks).await
    }

    async fn task_counts(&self) -> StoreResult<Progress> {
        stats::task_counts(self).await
    }

    async fn queue_stats(&self, now: Micros) -> StoreResult<QueueStats> {
        stats::queue_stats(self, now).await
    }

    async fn batch_depths(&self, limit: usize) -> StoreResult<Vec<BatchDepth>> {
        stats::batch_depths(self, limit).await
    }

    async fn attempt_list(&self, filter: AttemptFilter) -> StoreResult<Vec<(i64, AttemptRecord)>> {
        log::attempt_list(self, filter).await
    }

    async fn batch_usage(&self, batch: BatchId) -> StoreResult<BatchUsage> {
        log::batch_usage(self, batch).await
    }

    async fn running_list(&self) -> StoreResult<Vec<RunningTask>> {
        log::running_list(self).await
    }

    async fn prune(&self, before: Micros, chunk: usize) -> StoreResult<usize> {
        log::prune(self, before, chunk).await
    }

    async fn backup(&self) -> StoreResult<std::fs::File> {
        // The database is the server's to copy, with its own tools.
        Err(StoreError::Conflict(
            "the store is PostgreSQL, which qhost does not copy: back it up with `pg_dump` \
             (a consistent snapshot while the nodes run) or the database's continuous \
             archiving"
                .to_owned(),
        ))
    }

    async fn schedule_create(
        &self,
        spec: ScheduleSpec,
        next_due: Option<Micros>,
        now: Micros,
    ) -> StoreResult<ScheduleInfo> {
        schedules::create(self, spec, next_due, now).await
    }

    async fn schedule_list(&self) -> StoreResult<Vec<ScheduleInfo>> {
        schedules::list(self).await
    }

    async fn schedule_get(&self, name: String) -> StoreResult<ScheduleInfo> {
        schedules::get(self, &name).await
    }

    async fn schedule_ticks(&self, schedule: i64, limit: usize) -> StoreResult<Vec<Tick>> {
        schedules::ticks(self, schedule, limit).await
    }

    async fn schedule_set_paused(
        &self,
        name: String,
        paused: bool,
        next_due: Option<Micros>,
    ) -> StoreResult<ScheduleInfo> {
        schedules::set_paused(self, &name, paused, next_due).await
    }

    async fn schedule_delete(&self, name: String) -> StoreResult<()> {
        schedules::delete(self, &name).await
    }

    async fn schedule_due(&self, now: Micros) -> StoreResult<(Vec<ScheduleInfo>, Option<Micros>)> {
        schedules::due(self, now).await
    }

    async fn schedule_fire(&self, fire: Fire) -> StoreResult<Option<Tick>> {
        schedules::fire(self, fire).await
    }

    fn signals(&self) -> Option<broadcast::Receiver<Signal>> {
        Some(self.signals.subscribe())
    }

    fn is_shared(&self) -> bool {
        true
    }

    async fn node_beat(&self, beat: NodeBeat) -> StoreResult<()> {
        nodes::beat(self, beat).await
    }

    async fn node_list(&self) -> StoreResult<Vec<NodeInfo>> {
        nodes::list(self).await
    }

    async fn node_remove(&self, node: String) -> StoreResult<()> {
        nodes::remove(self, node).await
    }
}
