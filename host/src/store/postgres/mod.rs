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

use std::sync::atomic::{AtomicI64, Ordering};

use anyhow::Context;
use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Pool};
use tokio::sync::broadcast;
use tokio_postgres::error::SqlState;

use super::*;
pub use schema::{create_schema, drop_schema, redact};
use schema::{measure_clock_offset, migrate, pool};

/// A task's state as reads report it (from `tasks t LEFT JOIN leases l`): a claimed task
/// without a start mark is reserved.
const REPORTED_STATE: &str =
    "CASE WHEN t.state = 2 AND l.started_at IS NULL THEN 6 ELSE t.state END";

pub struct PostgresStore {
    /// Connections committing what callers are told is stored.
    durable: Pool,
    /// Connections committing the scheduler's bookkeeping (`synchronous_commit = off`).
    bookkeeping: Pool,
    node: String,
    channel: String,
    /// The database's clock minus this node's, microseconds.
    clock_offset: AtomicI64,
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
/// commits it. A transaction that lost a deadlock or a serialization conflict (rare:
/// claims never wait) is run again from the start.
macro_rules! transaction {
    ($store:expr, $commit:expr, |$tx:ident| $body:block) => {{
        let mut tries = 0u32;
        loop {
            let mut client = $store.client($commit).await?;
            let $tx = client
                .transaction()
                .await
                .map_err($crate::store::postgres::pg)?;
            let result: $crate::store::StoreResult<_> = async { $body }.await;
            let result = match result {
                Ok(value) => $tx
                    .commit()
                    .await
                    .map(|()| value)
                    .map_err($crate::store::postgres::pg),
                Err(err) => Err(err),
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
mod claim;
mod gate;
mod modules;
mod notifier;
mod schema;

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

async fn count_states(
    tx: &impl GenericClient,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> StoreResult<Progress> {
    let mut progress = Progress::default();
    for row in tx.query(sql, params).await.map_err(pg)? {
        let state: i32 = row.get(0);
        let count: i64 = row.get(1);
        if let Some(state) = TaskState::from_code(state.into()) {
            progress.add(state, count as u64);
        }
    }
    Ok(progress)
}

async fn task_info(tx: &impl GenericClient, task: TaskId) -> StoreResult<TaskInfo> {
    let r = tx
        .query_opt(
            &format!(
                "SELECT t.id, t.batch_id, t.module, t.ord, t.group_key, t.priority,
                        {REPORTED_STATE}, t.attempts, t.max_attempts, t.submitted_at,
                        t.ended_at, t.outcome, t.error, octet_length(t.output)
                 FROM tasks t LEFT JOIN leases l ON l.task_id = t.id WHERE t.id = $1"
            ),
            &[&task],
        )
        .await
        .map_err(pg)?
        .ok_or_else(|| not_found("task", task))?;
    Ok(TaskInfo {
        id: r.get(0),
        batch: r.get(1),
        module: digest_of(r.get(2)),
        order: r.get(3),
        group: r.get(4),
        priority: r.get(5),
        state: TaskState::from_code(r.get::<_, i32>(6).into()).unwrap_or(TaskState::Failed),
        attempts: r.get::<_, i32>(7) as u32,
        max_attempts: r.get::<_, i32>(8) as u32,
        submitted_at: r.get(9),
        ended_at: r.get(10),
        outcome: r.get::<_, Option<String>>(11).and_then(|o| o.parse().ok()),
        error: r.get(12),
        output_size: r.get::<_, Option<i32>>(13).map(|n| n as u64),
    })
}

/// Sets the priority of the tasks whose `column` is `value` and that have not started
/// (pending, or reserved by a node that will hand them back), in the queue too; returns
/// how many changed.
async fn set_pending_priority(
    tx: &impl GenericClient,
    column: &str,
    value: i64,
    priority: i32,
) -> StoreResult<u64> {
    let sql = format!(
        "WITH changed AS (
             UPDATE tasks SET priority = $1 WHERE {column} = $2
                 AND (state IN (0, 1)
                      OR (state = 2 AND id IN (SELECT task_id FROM leases WHERE started_at IS NULL)))
             RETURNING id),
         queued AS (UPDATE ready SET priority = $1 WHERE task_id IN (SELECT id FROM changed))
         SELECT COUNT(*) FROM changed"
    );
    let changed: i64 = tx
        .query_one(&sql, &[&priority, &value])
        .await
        .map_err(pg)?
        .get(0);
    Ok(changed as u64)
}

async fn submit(
    store: &PostgresStore,
    tx: &impl GenericClient,
    batch: BatchId,
    specs: &[TaskSpec],
    now: Micros,
) -> StoreResult<Vec<TaskId>> {
    gate::lock(tx, batch).await?;
    let row = tx
        .query_opt(
            "SELECT sealed, priority, next_vseq FROM batches WHERE id = $1 FOR UPDATE",
            &[&batch],
        )
        .await
        .map_err(pg)?
        .ok_or_else(|| not_found("batch", batch))?;
    let (sealed, batch_priority, next_vseq): (bool, i32, i64) =
        (row.get(0), row.get(1), row.get(2));
    if sealed {
        return Err(StoreError::Conflict(format!(
            "batch {batch} is sealed: it takes no more tasks"
        )));
    }
    let mut modules: Vec<String> = specs.iter().map(|s| s.module.to_hex()).collect();
    modules.sort_unstable();
    modules.dedup();
    let known: std::collections::HashSet<String> = tx
        .query(
            "SELECT digest FROM modules WHERE digest = ANY($1)",
            &[&modules],
        )
        .await
        .map_err(pg)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if let Some((index, spec)) = specs
        .iter()
        .enumerate()
        .find(|(_, spec)| !known.contains(&spec.module.to_hex()))
    {
        return Err(StoreError::Invalid(format!(
            "task {index}: module {} does not exist; add it first",
            spec.module
        )));
    }
    let Some(lowest) = specs.iter().map(|s| s.order).min() else {
        return Ok(Vec::new());
    };
    let old_gate = gate::current(tx, batch).await?;
    // Only tasks at the gate are ever claimed, so no order above the gate has started: a
    // submission at or above it needs no look at what started. A task ever claimed counts
    // as started (a hand-back keeps its claim time): it may have run in part.
    if old_gate.is_none_or(|gate| lowest < gate) {
        let started: Option<i64> = tx
            .query_one(
                "SELECT MAX(ord) FROM tasks
                 WHERE batch_id = $1 AND ord > $2 AND claimed_at IS NOT NULL",
                &[&batch, &lowest],
            )
            .await
            .map_err(pg)?
            .get(0);
        if let Some(started) = started
            && let Some((index, spec)) = specs
                .iter()
                .enumerate()
                .find(|(_, spec)| spec.order < started)
        {
            return Err(StoreError::Invalid(format!(
                "task {index}: order {} is lower than order {started}, which has already \
                 started in batch {batch}; use order {started} or higher",
                spec.order
            )));
        }
    }
    let vtime: i64 = tx
        .query_one("SELECT vtime FROM scheduler", &[])
        .await
        .map_err(pg)?
        .get(0);
    let first_vseq = next_vseq.max(vtime);
    let new_gate = Some(old_gate.map_or(lowest, |old| old.min(lowest)));
    if let (Some(old), Some(new)) = (old_gate, new_gate)
        && new < old
    {
        tx.execute(
            "WITH held AS (
                 UPDATE tasks SET state = 0 WHERE batch_id = $1 AND ord = $2 AND state = 1
                 RETURNING id)
             DELETE FROM ready WHERE task_id IN (SELECT id FROM held)",
            &[&batch, &old],
        )
        .await
        .map_err(pg)?;
    }

    let mut groups: Vec<&str> = specs.iter().filter_map(|s| s.group.as_deref()).collect();
    groups.sort_unstable();
    groups.dedup();
    if !groups.is_empty() {
        tx.execute(
            "INSERT INTO groups (key) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING",
            &[&groups],
        )
        .await
        .map_err(pg)?;
    }
    let mut per_order: std::collections::BTreeMap<i64, i64> = Default::default();
    for spec in specs {
        *per_order.entry(spec.order).or_default() += 1;
    }
    let (orders, counts): (Vec<i64>, Vec<i64>) = per_order.into_iter().unzip();
    tx.execute(
        "INSERT INTO batch_orders (batch_id, ord, open)
         SELECT $1, o, n FROM unnest($2::bigint[], $3::bigint[]) AS u(o, n)
         ON CONFLICT (batch_id, ord) DO UPDATE SET open = batch_orders.open + excluded.open",
        &[&batch, &orders, &counts],
    )
    .await
    .map_err(pg)?;

    let n = specs.len();
    let mut c = TaskColumns::with_capacity(n);
    for (index, spec) in specs.iter().enumerate() {
        c.module.push(spec.module.to_hex());
        c.input.push(&spec.input);
        c.order.push(spec.order);
        c.group.push(spec.group.as_deref());
        c.priority.push(spec.priority.unwrap_or(batch_priority));
        c.vseq.push(first_vseq + index as i64);
        c.state
            .push(if Some(spec.order) == new_gate { 1 } else { 0 });
        c.max_attempts.push(to_i32(spec.max_attempts));
        c.backoff_ms
            .push(i64::try_from(spec.backoff.as_millis()).unwrap_or(i64::MAX));
        c.limits
            .push(serde_json::to_string(&spec.limits).expect("limits serialize"));
        c.mounts
            .push(serde_json::to_string(&spec.mounts).expect("mounts serialize"));
        // 0: due at once (see the schema's ready_delayed).
        c.not_before
            .push(spec.not_before.map_or(0, |t| store.db_time(t)));
    }
    let rows = tx
        .query(
            "WITH added AS (
                 INSERT INTO tasks (batch_id, module, input, ord, group_key, priority, vseq,
                     state, max_attempts, backoff_ms, limits, mounts, not_before, submitted_at)
                 SELECT $1, module, input, ord, group_key, priority, vseq, state, max_attempts,
                     backoff_ms, limits, mounts, not_before, $2
                 FROM unnest($3::text[], $4::bytea[], $5::bigint[], $6::text[], $7::int[],
                     $8::bigint[], $9::int[], $10::int[], $11::bigint[], $12::text[],
                     $13::text[], $14::bigint[])
                     AS u(module, input, ord, group_key, priority, vseq, state, max_attempts,
                          backoff_ms, limits, mounts, not_before)
                 RETURNING id, batch_id, group_key, priority, vseq, not_before, state),
             queued AS (
                 INSERT INTO ready (task_id, batch_id, group_key, priority, vseq, not_before)
                 SELECT id, batch_id, group_key, priority, vseq, not_before FROM added
                 WHERE state = 1)
             SELECT id, vseq FROM added",
            &[
                &batch,
                &now,
                &c.module,
                &c.input,
                &c.order,
                &c.group,
                &c.priority,
                &c.vseq,
                &c.state,
                &c.max_attempts,
                &c.backoff_ms,
                &c.limits,
                &c.mounts,
                &c.not_before,
            ],
        )
        .await
        .map_err(pg)?;
    let mut ids = vec![0; n];
    for row in rows {
        let vseq: i64 = row.get(1);
        ids[(vseq - first_vseq) as usize] = row.get(0);
    }
    tx.execute(
        "UPDATE batches SET next_vseq = $1 WHERE id = $2",
        &[&(first_vseq + n as i64), &batch],
    )
    .await
    .map_err(pg)?;
    store.notify(tx, "w").await?;
    Ok(ids)
}

/// The columns of submitted tasks, as arrays for one `INSERT ... SELECT FROM unnest`.
struct TaskColumns<'a> {
    module: Vec<String>,
    input: Vec<&'a [u8]>,
    order: Vec<i64>,
    group: Vec<Option<&'a str>>,
    priority: Vec<i32>,
    vseq: Vec<i64>,
    state: Vec<i32>,
    max_attempts: Vec<i32>,
    backoff_ms: Vec<i64>,
    limits: Vec<String>,
    mounts: Vec<String>,
    not_before: Vec<i64>,
}

impl TaskColumns<'_> {
    fn with_capacity(n: usize) -> Self {
        TaskColumns {
            module: Vec::with_capacity(n),
            input: Vec::with_capacity(n),
            order: Vec::with_capacity(n),
            group: Vec::with_capacity(n),
            priority: Vec::with_capacity(n),
            vseq: Vec::with_capacity(n),
            state: Vec::with_capacity(n),
            max_attempts: Vec::with_capacity(n),
            backoff_ms: Vec::with_capacity(n),
            limits: Vec::with_capacity(n),
            mounts: Vec::with_capacity(n),
            not_before: Vec::with_capacity(n),
        }
    }
}

#[async_trait]
impl Store for PostgresStore {
    async fn module_put(
        &self,
        bytes: Vec<u8>,
        name: Option<String>,
        tag: Option<String>,
        now: Micros,
    ) -> StoreResult<ModuleInfo> {
        modules::put(self, bytes, name, tag, now).await
    }

    async fn module_bytes(&self, digest: Digest) -> StoreResult<Vec<u8>> {
        modules::bytes(self, digest).await
    }

    async fn module_list(&self) -> StoreResult<Vec<ModuleInfo>> {
        modules::list(self).await
    }

    async fn module_delete(&self, digest: Digest) -> StoreResult<()> {
        modules::delete(self, digest).await
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

    async fn batch_get(&self, batch: BatchId) -> StoreResult<BatchInfo> {
        batches::get(self, batch).await
    }

    async fn batch_open_count(&self, batch: BatchId) -> StoreResult<u64> {
        batches::open_count(self, batch).await
    }

    async fn batch_authorize(&self, batch: BatchId, handle_hash: [u8; 32]) -> StoreResult<()> {
        batches::authorize(self, batch, handle_hash).await
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

    async fn task_submit(
        &self,
        batch: BatchId,
        tasks: Vec<TaskSpec>,
        now: Micros,
    ) -> StoreResult<Vec<TaskId>> {
        let now = self.db_time(now);
        transaction!(self, Commit::Durable, |tx| {
            submit(self, &tx, batch, &tasks, now).await
        })
    }

    async fn task_get(&self, task: TaskId) -> StoreResult<TaskInfo> {
        let client = self.client(Commit::Durable).await?;
        task_info(&client, task).await
    }

    async fn task_output(&self, task: TaskId) -> StoreResult<Option<Vec<u8>>> {
        let client = self.client(Commit::Durable).await?;
        client
            .query_opt("SELECT output FROM tasks WHERE id = $1", &[&task])
            .await
            .map_err(pg)?
            .map(|r| r.get(0))
            .ok_or_else(|| not_found("task", task))
    }

    async fn task_set_priority(&self, task: TaskId, priority: i32) -> StoreResult<()> {
        transaction!(self, Commit::Durable, |tx| {
            if set_pending_priority(&tx, "id", task, priority).await? == 0 {
                let state = task_info(&tx, task).await?.state;
                return Err(StoreError::Conflict(format!(
                    "task {task} is {}: only the priority of a task that has not started can change",
                    state.as_str()
                )));
            }
            self.notify(&tx, "r").await?;
            Ok(())
        })
    }

    async fn task_cancel(&self, task: TaskId, now: Micros) -> StoreResult<CancelResult> {
        let now = self.db_time(now);
        transaction!(self, Commit::Durable, |tx| {
            let info = task_info(&tx, task).await?;
            gate::lock(&tx, info.batch).await?;
            let state: i32 = tx
                .query_one("SELECT state FROM tasks WHERE id = $1 FOR UPDATE", &[&task])
                .await
                .map_err(pg)?
                .get(0);
            match TaskState::from_code(state.into()) {
                Some(TaskState::Waiting | TaskState::Ready) => {
                    tx.execute(
                        "WITH cancelled AS (
                             UPDATE tasks SET state = 5, ended_at = $1, outcome = 'cancelled',
                                 error = 'cancelled before it ran' WHERE id = $2
                             RETURNING id)
                         DELETE FROM ready WHERE task_id IN (SELECT id FROM cancelled)",
                        &[&now, &task],
                    )
                    .await
                    .map_err(pg)?;
                    gate::close(&tx, &[(info.batch, info.order, 1)]).await?;
                    self.notify_batches(&tx, &[(task, info.batch)]).await?;
                    Ok(CancelResult::Cancelled)
                }
                Some(TaskState::Running) => {
                    tx.execute(
                        "UPDATE tasks SET cancel_requested = TRUE WHERE id = $1",
                        &[&task],
                    )
                    .await
                    .map_err(pg)?;
                    self.notify(&tx, "c").await?;
                    Ok(CancelResult::Requested)
                }
                _ => Ok(CancelResult::AlreadyEnded),
            }
        })
    }

    async fn group_set_limit(&self, key: String, limit: u32) -> StoreResult<()> {
        let limit = to_i32(limit);
        transaction!(self, Commit::Durable, |tx| {
            tx.execute(
                "INSERT INTO groups (key, lim) VALUES ($1, $2)
                 ON CONFLICT (key) DO UPDATE SET lim = excluded.lim",
                &[&key, &limit],
            )
            .await
            .map_err(pg)?;
            self.notify(&tx, "r").await?;
            Ok(())
        })
    }

    async fn group_get(&self, key: String) -> StoreResult<GroupInfo> {
        let client = self.client(Commit::Durable).await?;
        let row = client
            .query_opt("SELECT lim, running FROM groups WHERE key = $1", &[&key])
            .await
            .map_err(pg)?
            .ok_or_else(|| not_found("group", &key))?;
        let waiting: i64 = client
            .query_one(
                "SELECT COUNT(*) FROM tasks WHERE group_key = $1 AND state IN (0, 1)",
                &[&key],
            )
            .await
            .map_err(pg)?
            .get(0);
        Ok(GroupInfo {
            key,
            limit: row.get::<_, i32>(0) as u32,
            running: row.get::<_, i32>(1).max(0) as u64,
            waiting: waiting as u64,
        })
    }

    async fn task_claim(&self, params: ClaimParams) -> StoreResult<Claimed> {
        let params = ClaimParams {
            now: self.db_time(params.now),
            ..params
        };
        let mut claimed = transaction!(self, Commit::Bookkeeping, |tx| {
            let mut claimed = claim::claim(&tx, &params).await?;
            if claimed.tasks.len() < params.max {
                claimed.next_due = claim::next_due(&tx, params.now).await?;
            } else {
                // Claimable work may be left behind: nodes with idle slots claim it now.
                self.notify(&tx, "w").await?;
            }
            Ok(claimed)
        })?;
        claimed.next_due = claimed.next_due.map(|at| self.local_time(at));
        Ok(claimed)
    }

    async fn task_complete(
        &self,
        completions: Vec<Completion>,
        now: Micros,
    ) -> StoreResult<CompleteResult> {
        let now = self.db_time(now);
        let completions: Vec<Completion> = completions
            .into_iter()
            .map(|c| Completion {
                started_at: self.db_time(c.started_at),
                ended_at: self.db_time(c.ended_at),
                ..c.bounded()
            })
            .collect();
        transaction!(self, Commit::Bookkeeping, |tx| {
            let result = claim::complete(&tx, &completions, now).await?;
            self.notify_ended(&tx, &result).await?;
            Ok(result)
        })
    }

    async fn task_start(&self, starts: Vec<Start>) -> StoreResult<()> {
        let mut starts = starts;
        // One order of row locking across transactions.
        starts.sort_unstable_by_key(|s| s.task);
        let ids: Vec<i64> = starts.iter().map(|s| s.task).collect();
        let tokens: Vec<i64> = starts.iter().map(|s| s.lease_token).collect();
        let at: Vec<i64> = starts.iter().map(|s| self.db_time(s.at)).collect();
        transaction!(self, Commit::Bookkeeping, |tx| {
            let stmt = tx
                .prepare_cached(
                    "UPDATE leases AS l SET started_at = u.at
                     FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS u(id, token, at),
                         tasks AS t
                     WHERE l.task_id = u.id AND t.id = u.id AND t.lease_token = u.token",
                )
                .await
                .map_err(pg)?;
            tx.execute(&stmt, &[&ids, &tokens, &at]).await.map_err(pg)?;
            Ok(())
        })
    }

    async fn task_release(
        &self,
        tasks: Vec<(TaskId, i64)>,
        now: Micros,
    ) -> StoreResult<CompleteResult> {
        let now = self.db_time(now);
        transaction!(self, Commit::Bookkeeping, |tx| {
            let result = claim::release(&tx, &tasks, now).await?;
            self.notify(&tx, "w").await?;
            self.notify_ended(&tx, &result).await?;
            Ok(result)
        })
    }

    async fn lease_renew(&self, node: String, until: Micros) -> StoreResult<Vec<TaskId>> {
        let until = self.db_time(until);
        transaction!(self, Commit::Bookkeeping, |tx| {
            let rows = tx
                .query(
                    "UPDATE leases AS l SET expires = $1 FROM tasks AS t
                     WHERE l.node = $2 AND t.id = l.task_id
                     RETURNING l.task_id, t.cancel_requested",
                    &[&until, &node],
                )
                .await
                .map_err(pg)?;
            Ok(rows
                .iter()
                .filter(|r| r.get::<_, bool>(1))
                .map(|r| r.get(0))
                .collect())
        })
    }

    async fn lease_rescue(&self, node: Option<String>, now: Micros) -> StoreResult<CompleteResult> {
        let now = self.db_time(now);
        transaction!(self, Commit::Bookkeeping, |tx| {
            let result = claim::rescue(&tx, node.as_deref(), now).await?;
            self.notify_ended(&tx, &result).await?;
            Ok(result)
        })
    }

    async fn task_counts(&self) -> StoreResult<Progress> {
        let client = self.client(Commit::Durable).await?;
        let sql = format!(
            "SELECT {REPORTED_STATE}, COUNT(*) FROM tasks t
             LEFT JOIN leases l ON l.task_id = t.id GROUP BY 1"
        );
        count_states(&client, &sql, &[]).await
    }

    async fn attempt_list(&self, filter: AttemptFilter) -> StoreResult<Vec<(i64, AttemptRecord)>> {
        let client = self.client(Commit::Durable).await?;
        claim::attempt_list(&client, filter).await
    }

    async fn running_list(&self) -> StoreResult<Vec<RunningTask>> {
        let client = self.client(Commit::Durable).await?;
        let rows = client
            .query(
                "SELECT t.id, t.batch_id, l.node, t.attempts, t.group_key, t.ord, l.started_at,
                        l.expires
                 FROM leases l JOIN tasks t ON t.id = l.task_id
                 WHERE l.started_at IS NOT NULL
                 ORDER BY l.started_at, t.id",
                &[],
            )
            .await
            .map_err(pg)?;
        Ok(rows
            .iter()
            .map(|r| RunningTask {
                task: r.get(0),
                batch: r.get(1),
                node: r.get(2),
                slot: None,
                attempt: r.get::<_, i32>(3) as u32,
                group: r.get(4),
                order: r.get(5),
                since: r.get(6),
                lease_expires: r.get(7),
            })
            .collect())
    }

    async fn prune(&self, before: Micros, chunk: usize) -> StoreResult<usize> {
        let before = self.db_time(before);
        let chunk = chunk as i64;
        transaction!(self, Commit::Durable, |tx| {
            let ids: Vec<i64> = tx
                .query(
                    // Oldest first along the primary key: ended tasks are mostly the
                    // oldest, and no index on the end time slows every completion.
                    "SELECT id FROM tasks WHERE state >= 3 AND ended_at < $1
                     ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED",
                    &[&before, &chunk],
                )
                .await
                .map_err(pg)?
                .iter()
                .map(|r| r.get(0))
                .collect();
            tx.execute("DELETE FROM attempts WHERE task_id = ANY($1)", &[&ids])
                .await
                .map_err(pg)?;
            let deleted = tx
                .execute("DELETE FROM tasks WHERE id = ANY($1)", &[&ids])
                .await
                .map_err(pg)?;
            Ok(deleted as usize)
        })
    }

    fn signals(&self) -> Option<broadcast::Receiver<Signal>> {
        Some(self.signals.subscribe())
    }

    fn is_shared(&self) -> bool {
        true
    }

    async fn node_beat(&self, beat: NodeBeat) -> StoreResult<()> {
        {
            let client = self.client(Commit::Bookkeeping).await?;
            let offset = measure_clock_offset(&client)
                .await
                .map_err(StoreError::Internal)?;
            self.clock_offset.store(offset, Ordering::Relaxed);
        }
        let now = self.db_time(beat.now);
        let started_at = self.db_time(beat.started_at);
        let offset = self.clock_offset.load(Ordering::Relaxed);
        let workers = beat.workers as i32;
        transaction!(self, Commit::Bookkeeping, |tx| {
            tx.execute(
                "INSERT INTO nodes (name, workers, started_at, heartbeat_at, clock_offset)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (name) DO UPDATE SET workers = excluded.workers,
                     started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at,
                     clock_offset = excluded.clock_offset",
                &[&beat.node, &workers, &started_at, &now, &offset],
            )
            .await
            .map_err(pg)?;
            Ok(())
        })
    }

    async fn node_list(&self) -> StoreResult<Vec<NodeInfo>> {
        let client = self.client(Commit::Durable).await?;
        let rows = client
            .query(
                "SELECT name, workers, started_at, heartbeat_at, clock_offset FROM nodes ORDER BY name",
                &[],
            )
            .await
            .map_err(pg)?;
        Ok(rows
            .iter()
            .map(|r| NodeInfo {
                node: r.get(0),
                workers: r.get::<_, i32>(1) as usize,
                started_at: r.get(2),
                heartbeat_at: r.get(3),
                clock_offset: r.get(4),
            })
            .collect())
    }

    async fn node_remove(&self, node: String) -> StoreResult<()> {
        transaction!(self, Commit::Bookkeeping, |tx| {
            tx.execute("DELETE FROM nodes WHERE name = $1", &[&node])
                .await
                .map_err(pg)?;
            Ok(())
        })
    }
}
