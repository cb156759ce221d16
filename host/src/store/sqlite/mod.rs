//! The embedded SQLite driver: one database file in WAL mode, created and migrated on
//! first open.
//!
//! Durability: what callers are told is stored (a module, a batch, a submission, a
//! cancellation, a priority or limit change) is committed with `synchronous = FULL`: it is
//! on disk and survives a power cut. The scheduler's own bookkeeping (claims, completions,
//! lease renewals) commits with `synchronous = NORMAL`: it survives a crash of the process,
//! and a power cut can undo only its last moments, which re-runs the tasks whose ends were
//! undone (tasks run at least once).
//! Weaknesses, written down: SQLite has one writer at a time, so every write (claims,
//! completions, submissions) is serialized through one connection; the driver batches
//! claims and completions to keep that writer busy with few, large transactions. Only one
//! qhost process may use a database file: a second is refused by SQLite's exclusive
//! lock on the file, see [`SqliteStore::open`].
//!
//! Where things are: `modules.rs`, `batches.rs`, `tasks.rs` (submission, cancellation,
//! priority, groups), `pause.rs` (pauses, limits changed after the fact), `redrive.rs`
//! (re-drive, and bulk cancel and priority), `keys.rs` (a batch opened with its tasks at
//! once, idempotency keys), `claim.rs` (the claim and its look behind the scan), `complete.rs`
//! (completion, retry, rescue, hand-back, lease renewal, start marks), `lists.rs` (lists of
//! batches and tasks, what a task waits on), `log.rs` (attempt
//! records, the running view, counts, pruning), `nodes.rs` (why there is no registry),
//! `gate.rs` (ordering gates), `hooks.rs` (the webhook outbox), `backup.rs` (a copy made
//! while the store runs) and `schema.rs` (opening, pragmas, migrations).
//! Statements that change a task and so fire the schema's triggers are `OR FAIL`: SQLite
//! keeps a journal for each statement with triggers, to undo that statement alone on an
//! error, copying every page it touches; here every error rolls the whole transaction
//! back, so the hot path spares that copy.
//! Statements longer than a line or two are in `sql/`, each headed by what it does, its
//! parameters and the state codes it uses; the migrations are in `migrations/`. This file
//! holds the store, its connection and transactions, and the [`Store`] methods, each a
//! call into one of those files.

mod backup;
mod batches;
mod claim;
mod complete;
mod gate;
mod grants;
mod graph;
mod hooks;
mod keys;
mod lists;
mod log;
mod modules;
mod nodes;
mod pause;
#[cfg(test)]
mod plans;
mod quotas;
mod redrive;
mod schedules;
mod schema;
mod share;
mod spawn;
mod stats;
mod tasks;
mod tenants;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rusqlite::{Connection, Transaction, TransactionBehavior};

use super::*;

pub struct SqliteStore {
    /// A std mutex, not an async one: it is only ever held inside `spawn_blocking`.
    conn: Arc<Mutex<Conn>>,
    /// Whether the server has a webhook ([`Store::webhook_server`]).
    server_hook: AtomicBool,
    /// The database file's directory, where a backup is written before it is read.
    dir: PathBuf,
}

struct Conn {
    conn: Connection,
    /// Whether commits currently wait for the disk (`synchronous = FULL`).
    durable: bool,
}

/// How a write commits: see the module documentation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Commit {
    Durable,
    Bookkeeping,
}

impl SqliteStore {
    /// Opens (creating and migrating if needed) the database at `path`.
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        let conn = schema::open(path)?;
        Ok(SqliteStore {
            conn: Arc::new(Mutex::new(Conn {
                conn,
                durable: true,
            })),
            server_hook: AtomicBool::new(false),
            dir: match path.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
                _ => PathBuf::from("."),
            },
        })
    }

    /// Opens the database at `path` as the driver does (creating and migrating it), for a
    /// tool that writes it directly (`qhost bench fill`) before a store opens it.
    pub fn connect(path: &Path) -> anyhow::Result<Connection> {
        schema::open(path)
    }

    fn server_hook(&self) -> bool {
        self.server_hook.load(Ordering::Relaxed)
    }

    /// Runs `f` on the connection, off the async executor.
    async fn call<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = conn.lock().expect("sqlite connection lock");
            f(&mut conn.conn)
        })
        .await
        .map_err(|e| StoreError::Internal(anyhow::anyhow!("store task failed: {e}")))?
    }

    /// Runs `f` in one write transaction that is durable once it returns.
    async fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> StoreResult<T> + Send + 'static,
    {
        self.write_as(Commit::Durable, f).await
    }

    /// Runs `f` in one write transaction committed as `commit` says.
    async fn write_as<T, F>(&self, commit: Commit, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> StoreResult<T> + Send + 'static,
    {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let mut guard = conn.lock().expect("sqlite connection lock");
            let durable = commit == Commit::Durable;
            if guard.durable != durable {
                let sql = if durable {
                    "PRAGMA synchronous = FULL"
                } else {
                    "PRAGMA synchronous = NORMAL"
                };
                guard
                    .conn
                    .prepare_cached(sql)
                    .and_then(|mut pragma| pragma.execute([]))
                    .map_err(internal)?;
                guard.durable = durable;
            }
            let tx = guard
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(internal)?;
            let value = f(&tx)?;
            tx.commit().map_err(internal)?;
            Ok(value)
        })
        .await
        .map_err(|e| StoreError::Internal(anyhow::anyhow!("store task failed: {e}")))?
    }
}

/// Whether `err` is SQLite refusing a value: one larger than its limit (1e9 bytes by
/// default), "string or blob too big".
pub(super) fn is_refusal(err: &(dyn std::error::Error + 'static)) -> bool {
    matches!(
        err.downcast_ref::<rusqlite::Error>(),
        Some(rusqlite::Error::SqliteFailure(e, _)) if e.code == rusqlite::ErrorCode::TooBig
    )
}

pub(super) fn internal(err: rusqlite::Error) -> StoreError {
    StoreError::Internal(anyhow::Error::new(err))
}

fn not_found(what: &'static str, id: impl ToString) -> StoreError {
    StoreError::NotFound {
        what,
        id: id.to_string(),
    }
}

fn digest_of(text: String) -> Digest {
    Digest::from_hex(&text).unwrap_or(Digest([0; 32]))
}

#[async_trait]
impl Store for SqliteStore {
    async fn module_put(
        &self,
        bytes: Vec<u8>,
        name: Option<String>,
        tag: Option<String>,
        now: Micros,
    ) -> StoreResult<ModuleAdded> {
        let digest = Digest::of(&bytes);
        self.write(move |tx| modules::put(tx, digest, bytes, name, tag, now))
            .await
    }

    async fn module_bytes(&self, digest: Digest) -> StoreResult<Vec<u8>> {
        self.call(move |conn| modules::bytes(conn, digest)).await
    }

    async fn module_list(&self) -> StoreResult<Vec<ModuleInfo>> {
        self.call(|conn| modules::list(conn)).await
    }

    async fn module_lookup(&self, names: Vec<String>) -> StoreResult<Vec<(String, Digest)>> {
        self.call(move |conn| modules::lookup(conn, names)).await
    }

    async fn module_delete(&self, digest: Digest) -> StoreResult<()> {
        self.write(move |tx| modules::delete(tx, digest)).await
    }

    async fn module_unname(&self, name: String) -> StoreResult<Digest> {
        self.write(move |tx| modules::unname(tx, &name)).await
    }

    async fn tenant_add(&self, name: String, now: Micros) -> StoreResult<TenantInfo> {
        self.write(move |tx| tenants::add(tx, name, now)).await
    }

    async fn tenant_list(&self) -> StoreResult<Vec<TenantInfo>> {
        self.call(|conn| tenants::list(conn, None)).await
    }

    async fn tenant_get(&self, tenant: TenantId) -> StoreResult<TenantInfo> {
        self.call(move |conn| tenants::get(conn, tenant)).await
    }

    async fn tenant_rules(
        &self,
        tenant: TenantId,
        server_max_priority: i32,
    ) -> StoreResult<TenantRules> {
        self.call(move |conn| tenants::rules(conn, tenant, server_max_priority))
            .await
    }

    async fn tenant_set(
        &self,
        name: String,
        change: TenantChange,
        now: Micros,
    ) -> StoreResult<TenantInfo> {
        self.write(move |tx| tenants::set(tx, name, change, now))
            .await
    }

    async fn tenant_lower_priorities(&self, tenant: TenantId, ceiling: i32) -> StoreResult<u64> {
        self.write(move |tx| tenants::lower_priorities(tx, tenant, ceiling))
            .await
    }

    async fn token_add(
        &self,
        tenant: String,
        secret_hash: [u8; 32],
        now: Micros,
    ) -> StoreResult<TokenInfo> {
        self.write(move |tx| tenants::token_add(tx, tenant, secret_hash, now))
            .await
    }

    async fn token_list(&self, tenant: String) -> StoreResult<Vec<TokenInfo>> {
        self.call(move |conn| tenants::token_list(conn, tenant))
            .await
    }

    async fn token_revoke(
        &self,
        tenant: String,
        token: i64,
        now: Micros,
    ) -> StoreResult<TokenInfo> {
        self.write(move |tx| tenants::token_revoke(tx, tenant, token, now))
            .await
    }

    async fn token_check(&self, token: i64, secret_hash: [u8; 32]) -> StoreResult<TenantId> {
        self.call(move |conn| tenants::token_check(conn, token, secret_hash))
            .await
    }

    async fn batch_open(
        &self,
        spec: BatchSpec,
        handle_hash: [u8; 32],
        now: Micros,
    ) -> StoreResult<BatchInfo> {
        self.write(move |tx| batches::open(tx, spec, handle_hash, now))
            .await
    }

    async fn batch_set_handle(&self, batch: BatchId, handle_hash: [u8; 32]) -> StoreResult<()> {
        self.write(move |tx| batches::set_handle(tx, batch, handle_hash))
            .await
    }

    async fn batch_edges(
        &self,
        batch: BatchId,
        limit: usize,
    ) -> StoreResult<Vec<(TaskId, TaskId)>> {
        self.call(move |conn| graph::edges(conn, batch, limit))
            .await
    }

    async fn batch_get(&self, batch: BatchId) -> StoreResult<BatchInfo> {
        self.call(move |conn| batches::get(conn, batch)).await
    }

    async fn batch_grant(&self, batch: BatchId) -> StoreResult<Grant> {
        self.call(move |conn| grants::get(conn, batch)).await
    }

    async fn grant_secret_sample(&self) -> StoreResult<Option<Setting>> {
        self.call(|conn| grants::secret_sample(conn)).await
    }

    async fn batch_open_count(&self, batch: BatchId) -> StoreResult<u64> {
        self.call(move |conn| batches::open_count(conn, batch))
            .await
    }

    async fn batch_authorize(
        &self,
        batch: BatchId,
        key: BatchKey,
    ) -> StoreResult<Option<TenantId>> {
        self.call(move |conn| batches::authorize(conn, batch, key))
            .await
    }

    async fn batch_tenant(&self, batch: BatchId) -> StoreResult<Option<TenantId>> {
        self.call(move |conn| batches::tenant(conn, batch)).await
    }

    async fn batch_seal(&self, batch: BatchId) -> StoreResult<()> {
        self.write(move |tx| batches::seal(tx, batch)).await
    }

    async fn batch_set_priority(&self, batch: BatchId, priority: i32) -> StoreResult<u64> {
        self.write(move |tx| batches::set_priority(tx, batch, priority))
            .await
    }

    async fn batch_cancel(&self, batch: BatchId, now: Micros) -> StoreResult<u64> {
        let server = self.server_hook();
        self.write(move |tx| batches::cancel(tx, batch, now, server))
            .await
    }

    async fn batch_release(&self, batch: BatchId) -> StoreResult<()> {
        self.write(move |tx| batches::release(tx, batch)).await
    }

    async fn batch_set_quotas(
        &self,
        batch: BatchId,
        change: QuotaChange,
    ) -> StoreResult<BatchInfo> {
        self.write(move |tx| {
            quotas::set(tx, batch, change)?;
            batches::get(tx, batch)
        })
        .await
    }

    async fn task_submit(
        &self,
        batch: BatchId,
        tasks: Admitted,
        now: Micros,
    ) -> StoreResult<Vec<TaskId>> {
        let (tasks, trace) = tasks.into_parts();
        self.write(move |tx| tasks::submit(tx, batch, tasks, trace.as_deref(), now))
            .await
    }

    async fn task_get(&self, task: TaskId) -> StoreResult<TaskInfo> {
        self.call(move |conn| tasks::get(conn, task)).await
    }

    async fn task_output(&self, task: TaskId) -> StoreResult<Option<Vec<u8>>> {
        self.call(move |conn| tasks::output(conn, task)).await
    }

    async fn task_input(&self, task: TaskId) -> StoreResult<Vec<u8>> {
        self.call(move |conn| tasks::input(conn, task)).await
    }

    async fn task_inputs(&self, task: TaskId) -> StoreResult<Vec<Input>> {
        self.call(move |conn| graph::inputs(conn, task)).await
    }

    async fn task_spawn(
        &self,
        parent: TaskId,
        child: Admitted,
        now: Micros,
    ) -> StoreResult<TaskId> {
        let (mut tasks, trace) = child.into_parts();
        let child = tasks.pop().expect("one child");
        // Bookkeeping, as its parent's attempt is (see `store/spawn.rs`).
        self.write_as(Commit::Bookkeeping, move |tx| {
            spawn::submit(tx, parent, child, trace.as_deref(), now)
        })
        .await
    }

    async fn task_saved(&self, task: TaskId) -> StoreResult<Option<Vec<u8>>> {
        self.call(move |conn| spawn::saved(conn, task)).await
    }

    async fn task_set_priority(&self, task: TaskId, priority: i32) -> StoreResult<()> {
        self.write(move |tx| tasks::set_priority(tx, task, priority))
            .await
    }

    async fn task_cancel(&self, task: TaskId, now: Micros) -> StoreResult<CancelResult> {
        let server = self.server_hook();
        self.write(move |tx| tasks::cancel(tx, task, now, server))
            .await
    }

    async fn group_set_limit(&self, key: String, limit: u32) -> StoreResult<()> {
        self.write(move |tx| pause::group_set_limit(tx, key, limit))
            .await
    }

    async fn group_set_paused(&self, key: String, paused: bool) -> StoreResult<()> {
        self.write(move |tx| pause::group_set_paused(tx, key, paused))
            .await
    }

    async fn group_set_rate(&self, key: String, rate: Option<GroupRate>) -> StoreResult<()> {
        self.write(move |tx| pause::group_set_rate(tx, key, rate))
            .await
    }

    async fn batch_set_paused(&self, batch: BatchId, paused: bool) -> StoreResult<()> {
        self.write(move |tx| pause::batch_set_paused(tx, batch, paused))
            .await
    }

    async fn batch_set_max_parallel(
        &self,
        batch: BatchId,
        max_parallel: Option<u32>,
    ) -> StoreResult<()> {
        self.write(move |tx| pause::batch_set_max_parallel(tx, batch, max_parallel))
            .await
    }

    async fn task_retry(&self, select: TaskSelect) -> StoreResult<u64> {
        self.write(move |tx| redrive::retry(tx, &select)).await
    }

    async fn task_cancel_where(&self, select: TaskSelect, now: Micros) -> StoreResult<BulkCancel> {
        let server = self.server_hook();
        self.write(move |tx| redrive::cancel(tx, &select, now, server))
            .await
    }

    async fn task_set_priority_where(&self, select: TaskSelect, priority: i32) -> StoreResult<u64> {
        self.write(move |tx| redrive::set_priority(tx, &select, priority))
            .await
    }

    async fn batch_create(&self, new: NewBatch, now: Micros) -> StoreResult<Answer<Created>> {
        self.write(move |tx| keys::create(tx, new, now)).await
    }

    async fn task_submit_keyed(
        &self,
        batch: BatchId,
        tasks: Admitted,
        key: RequestKey,
        now: Micros,
    ) -> StoreResult<Answer<Vec<TaskId>>> {
        let (tasks, trace) = tasks.into_parts();
        self.write(move |tx| keys::submit(tx, batch, tasks, trace.as_deref(), key, now))
            .await
    }

    async fn group_get(&self, key: String) -> StoreResult<GroupInfo> {
        self.call(move |conn| tasks::group_get(conn, key)).await
    }

    async fn group_list(
        &self,
        after: String,
        batch: Option<BatchId>,
        limit: usize,
    ) -> StoreResult<Vec<GroupRow>> {
        self.call(move |conn| tasks::group_list(conn, &after, batch, limit))
            .await
    }

    async fn task_claim(&self, params: ClaimParams) -> StoreResult<Claimed> {
        self.write_as(Commit::Bookkeeping, move |tx| claim::claim(tx, &params))
            .await
    }

    async fn task_complete(
        &self,
        completions: Vec<Completion>,
        now: Micros,
    ) -> StoreResult<CompleteResult> {
        self.task_report(Vec::new(), completions, now).await
    }

    async fn task_start(&self, starts: Vec<Start>) -> StoreResult<()> {
        self.write_as(Commit::Bookkeeping, move |tx| complete::start(tx, starts))
            .await
    }

    async fn task_report(
        &self,
        starts: Vec<Start>,
        completions: Vec<Completion>,
        now: Micros,
    ) -> StoreResult<CompleteResult> {
        let completions: Vec<Completion> =
            completions.into_iter().map(Completion::bounded).collect();
        let server = self.server_hook();
        self.write_as(Commit::Bookkeeping, move |tx| {
            complete::report(tx, starts, completions, now, server)
        })
        .await
    }

    fn claims_in_reports(&self) -> bool {
        true
    }

    async fn task_report_claim(
        &self,
        starts: Vec<Start>,
        completions: Vec<Completion>,
        claim: ClaimParams,
    ) -> StoreResult<(CompleteResult, Claimed)> {
        let completions: Vec<Completion> =
            completions.into_iter().map(Completion::bounded).collect();
        let server = self.server_hook();
        self.write_as(Commit::Bookkeeping, move |tx| {
            let report = complete::report(tx, starts, completions, claim.now, server)?;
            Ok((report, claim::claim(tx, &claim)?))
        })
        .await
    }

    async fn task_hand_back(
        &self,
        tasks: Vec<(TaskId, i64)>,
        now: Micros,
    ) -> StoreResult<CompleteResult> {
        let server = self.server_hook();
        self.write_as(Commit::Bookkeeping, move |tx| {
            complete::hand_back(tx, &tasks, now, server)
        })
        .await
    }

    async fn lease_renew(&self, node: String, until: Micros) -> StoreResult<Vec<TaskId>> {
        self.write_as(Commit::Bookkeeping, move |tx| {
            complete::renew(tx, node, until)
        })
        .await
    }

    async fn lease_rescue(&self, node: Option<String>, now: Micros) -> StoreResult<CompleteResult> {
        let server = self.server_hook();
        self.write_as(Commit::Bookkeeping, move |tx| {
            complete::rescue(tx, node.as_deref(), now, server)
        })
        .await
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
        self.write_as(Commit::Bookkeeping, move |tx| {
            hooks::claim(tx, now, hold_until, max, server)
        })
        .await
    }

    async fn hook_done(&self, id: i64) -> StoreResult<()> {
        self.write(move |tx| hooks::done(tx, id)).await
    }

    async fn hook_retry(&self, id: i64, due: Micros, body: Vec<u8>) -> StoreResult<()> {
        self.write(move |tx| hooks::retry(tx, id, due, body)).await
    }

    async fn batch_list(&self, filter: BatchFilter) -> StoreResult<Vec<BatchInfo>> {
        self.call(move |conn| lists::batches(conn, filter)).await
    }

    async fn task_list(&self, filter: TaskFilter) -> StoreResult<TaskPage> {
        self.call(move |conn| lists::tasks(conn, filter)).await
    }

    async fn task_hold(&self, tasks: Vec<TaskId>) -> StoreResult<Vec<HoldFacts>> {
        self.call(move |conn| lists::hold(conn, &tasks)).await
    }

    async fn task_counts(&self) -> StoreResult<Progress> {
        self.call(|conn| stats::task_counts(conn)).await
    }

    async fn queue_stats(&self, now: Micros) -> StoreResult<QueueStats> {
        self.call(move |conn| stats::queue_stats(conn, now)).await
    }

    async fn batch_depths(&self, limit: usize) -> StoreResult<Vec<BatchDepth>> {
        self.call(move |conn| stats::batch_depths(conn, limit))
            .await
    }

    async fn attempt_list(&self, filter: AttemptFilter) -> StoreResult<Vec<(i64, AttemptRecord)>> {
        self.call(move |conn| log::attempt_list(conn, filter)).await
    }

    async fn batch_usage(&self, batch: BatchId) -> StoreResult<BatchUsage> {
        self.call(move |conn| log::batch_usage(conn, batch)).await
    }

    async fn running_list(&self) -> StoreResult<Vec<RunningTask>> {
        self.call(|conn| log::running_list(conn)).await
    }

    async fn prune(&self, before: Micros, chunk: usize) -> StoreResult<usize> {
        self.write(move |tx| Ok(log::prune(tx, before, chunk)? + keys::prune(tx, before, chunk)?))
            .await
    }

    async fn backup(&self) -> StoreResult<std::fs::File> {
        let dir = self.dir.clone();
        self.call(move |conn| backup::copy(conn, &dir)).await
    }

    async fn schedule_create(
        &self,
        spec: ScheduleSpec,
        next_due: Option<Micros>,
        now: Micros,
    ) -> StoreResult<ScheduleInfo> {
        self.write(move |tx| schedules::create(tx, spec, next_due, now))
            .await
    }

    async fn schedule_list(&self) -> StoreResult<Vec<ScheduleInfo>> {
        self.call(|conn| schedules::list(conn)).await
    }

    async fn schedule_get(&self, name: String) -> StoreResult<ScheduleInfo> {
        self.call(move |conn| schedules::get(conn, &name)).await
    }

    async fn schedule_ticks(&self, schedule: i64, limit: usize) -> StoreResult<Vec<Tick>> {
        self.call(move |conn| schedules::ticks(conn, schedule, limit))
            .await
    }

    async fn schedule_set_paused(
        &self,
        name: String,
        paused: bool,
        next_due: Option<Micros>,
    ) -> StoreResult<ScheduleInfo> {
        self.write(move |tx| schedules::set_paused(tx, &name, paused, next_due))
            .await
    }

    async fn schedule_delete(&self, name: String) -> StoreResult<()> {
        self.write(move |tx| schedules::delete(tx, &name)).await
    }

    async fn schedule_due(&self, now: Micros) -> StoreResult<(Vec<ScheduleInfo>, Option<Micros>)> {
        self.call(move |conn| schedules::due(conn, now)).await
    }

    async fn schedule_fire(&self, fire: Fire) -> StoreResult<Option<Tick>> {
        self.write(move |tx| schedules::fire(tx, fire)).await
    }
}
