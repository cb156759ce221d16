//! Tasks and groups: submission, what a task reports, its output, priority and
//! cancellation, and group limits.

use std::collections::HashSet;

use deadpool_postgres::GenericClient;

use super::cached::Cached;
use super::{Commit, PostgresStore, digest_of, gate, not_found, pg, to_i32};
use crate::store::quota;
use crate::store::*;

/// Adds tasks to a batch, behind its gate or at it; lowers the gate when a task comes in
/// below it.
pub(super) async fn submit(
    store: &PostgresStore,
    batch: BatchId,
    tasks: Admitted,
    now: Micros,
) -> StoreResult<Vec<TaskId>> {
    let now = store.db_time(now);
    transaction!(store, Commit::Durable, |tx| {
        submit_in(store, tx, batch, &tasks, now).await
    })
}

/// Submits within the transaction `tx`; `now` is the database's clock.
///
/// Two round trips: the reads, then the writes, each a pipeline of prepared statements
/// that the server runs in the order sent, so the reads run under the batch's quota row
/// lock, gate lock and row lock, then its tenant's open-limit lock, taken in that order
/// (see `quotas.rs`, `tenants.rs`).
pub(super) async fn submit_in(
    store: &PostgresStore,
    tx: &impl GenericClient,
    batch: BatchId,
    tasks: &Admitted,
    now: Micros,
) -> StoreResult<Vec<TaskId>> {
    let specs = tasks.tasks();
    let mut modules: Vec<String> = specs.iter().map(|s| s.module.to_hex()).collect();
    modules.sort_unstable();
    modules.dedup();
    let lowest = specs.iter().map(|s| s.order).min();
    let (
        quota,
        lock,
        batch_row,
        lock_open,
        open_now,
        known_modules,
        gate_now,
        started,
        vtime,
        fan_ins,
    ) = tokio::try_join!(
        tx.prepare_cached(super::quotas::LOCK_SQL),
        tx.prepare_cached(gate::LOCK_SQL),
        tx.prepare_cached(
            "SELECT sealed, priority, next_vseq, tenant_id FROM batches WHERE id = $1 FOR UPDATE"
        ),
        tx.prepare_cached(super::tenants::LOCK_OPEN_SQL),
        tx.prepare_cached(super::tenants::OPEN_SQL),
        tx.prepare_cached("SELECT digest FROM modules WHERE digest = ANY($1)"),
        tx.prepare_cached(gate::CURRENT_SQL),
        // A task ever claimed counts as started (a hand-back keeps its claim time): it may
        // have run in part. Orders above the gate may have started too (a re-drive reopens
        // a lower order under them), so every submission looks, above its lowest order only.
        tx.prepare_cached(
            "SELECT MAX(ord) FROM tasks
             WHERE batch_id = $1 AND ord > $2 AND claimed_at IS NOT NULL"
        ),
        tx.prepare_cached("SELECT vtime FROM scheduler"),
        tx.prepare_cached(super::graph::FAN_INS_SQL),
    )
    .map_err(pg)?;
    let key = gate::key(batch);
    let above = lowest.unwrap_or(i64::MAX);
    let (quota, _, batch_row, _, open_now, known, old_gate, started, vtime, fan_ins) =
        tokio::try_join!(
            async { tx.query_opt(&quota, &[&batch]).await },
            async { tx.execute(&lock, &[&key]).await },
            async { tx.query_opt(&batch_row, &[&batch]).await },
            async { tx.execute(&lock_open, &[&batch]).await },
            async { tx.query_opt(&open_now, &[&batch]).await },
            async { tx.query(&known_modules, &[&modules]).await },
            async { tx.query_one(&gate_now, &[&batch]).await },
            async { tx.query_one(&started, &[&batch, &above]).await },
            async { tx.query_one(&vtime, &[]).await },
            async { tx.query(&fan_ins, &[&batch]).await },
        )
        .map_err(pg)?;
    let row = batch_row.ok_or_else(|| not_found("batch", batch))?;
    let (sealed, batch_priority, next_vseq, tenant): (bool, i32, i64, Option<TenantId>) =
        (row.get(0), row.get(1), row.get(2), row.get(3));
    if sealed {
        return Err(errors::batch_sealed(batch));
    }
    let (quotas, usage) = quota
        .as_ref()
        .map(super::quotas::from_row)
        .unwrap_or_default();
    let added = quota::check_submission(batch, quotas, usage, specs)?;
    super::tenants::check_open(open_now.as_ref(), specs.len() as u64)?;
    let known: HashSet<String> = known.iter().map(|r| r.get(0)).collect();
    admit::check_modules(specs, |module| Ok(known.contains(&module.to_hex())))?;
    if lowest.is_none() {
        return Ok(Vec::new());
    }
    let old_gate: Option<i64> = old_gate.get(0);
    admit::check_orders(specs, started.get(0), batch)?;
    let reads = crate::store::graph::reads(specs);
    let edges = if reads.is_empty() && fan_ins.is_empty() {
        crate::store::graph::Graph {
            deps: vec![0; specs.len()],
            ..Default::default()
        }
    } else {
        let stored = super::graph::read(tx, batch, &reads, &fan_ins).await?;
        crate::store::graph::plan(batch, specs, &stored)?
    };
    let first_vseq = next_vseq.max(vtime.get(0));
    let new_gate = admit::gate_after(old_gate, specs);
    let hold = match (old_gate, new_gate) {
        (Some(old), Some(new)) if new < old => Some(old),
        _ => None,
    };

    let mut groups: Vec<&str> = specs.iter().filter_map(|s| s.group.as_deref()).collect();
    groups.sort_unstable();
    groups.dedup();
    let (orders, counts) = gate::per_order(specs.iter().map(|s| s.order));
    let n = specs.len();
    let mut c = TaskColumns::with_capacity(n);
    for (index, spec) in specs.iter().enumerate() {
        c.module.push(spec.module.to_hex());
        c.input.push(&spec.input);
        c.order.push(spec.order);
        c.group.push(spec.group.as_deref());
        c.priority.push(spec.priority.unwrap_or(batch_priority));
        c.vseq.push(first_vseq + index as i64);
        let state = if edges.deps[index] > 0 {
            TaskState::Waiting
        } else {
            admit::first_state(spec.order, new_gate)
        };
        c.state.push(state.code() as i32);
        c.key.push(spec.key.as_deref());
        c.deps_open.push(edges.deps[index] as i32);
        c.cost.push((spec.cost != 1).then(|| to_i32(spec.cost)));
        c.max_attempts.push(to_i32(spec.max_attempts));
        c.backoff_ms
            .push(i64::try_from(spec.backoff.as_millis()).unwrap_or(i64::MAX));
        c.limits.push(limits::to_stored(&spec.limits));
        c.mounts
            .push(serde_json::to_string(&spec.mounts).expect("mounts serialize"));
        // 0: due at once (see the schema's ready_delayed).
        c.not_before
            .push(spec.not_before.map_or(0, |t| store.db_time(t)));
    }
    let costly = c.cost.iter().any(Option::is_some);
    let (hold_stmt, groups_stmt, orders_stmt, insert, next_vseq_stmt, usage_stmt) =
        tokio::try_join!(
            tx.prepare_cached(include_str!("sql/submit_hold.sql")),
            tx.prepare_cached(
                "INSERT INTO groups (key) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING"
            ),
            tx.prepare_cached(gate::OPEN_SQL),
            tx.prepare_cached(include_str!("sql/submit_tasks.sql")),
            // costly: the claim reads this batch's costs from now on (migration 0032).
            tx.prepare_cached(
                "UPDATE batches SET next_vseq = $1, costly = costly OR $3 WHERE id = $2"
            ),
            tx.prepare_cached(super::quotas::SUBMIT_SQL),
        )
        .map_err(pg)?;
    let after = first_vseq + n as i64;
    let (.., rows, _, _, ()) = tokio::try_join!(
        async {
            match hold {
                Some(old) => tx.execute(&hold_stmt, &[&batch, &old]).await.map_err(pg),
                None => Ok(0),
            }
        },
        async {
            if groups.is_empty() {
                return Ok(0);
            }
            tx.execute(&groups_stmt, &[&groups]).await.map_err(pg)
        },
        async {
            tx.execute(&orders_stmt, &[&batch, &orders, &counts, &tenant])
                .await
                .map_err(pg)
        },
        async {
            tx.query(
                &insert,
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
                    &tasks.trace(),
                    &c.key,
                    &c.deps_open,
                    &tenant,
                    &c.cost,
                ],
            )
            .await
            .map_err(pg)
        },
        async {
            tx.execute(&next_vseq_stmt, &[&after, &batch, &costly])
                .await
                .map_err(pg)
        },
        async {
            tx.execute(&usage_stmt, &[&added.tasks, &added.input_bytes, &batch])
                .await
                .map_err(pg)
        },
        store.notify(tx, "w"),
    )?;
    let mut ids = vec![0; n];
    for row in rows {
        let vseq: i64 = row.get(1);
        ids[(vseq - first_vseq) as usize] = row.get(0);
    }
    if !edges.edges.is_empty() || specs.iter().any(|s| s.fan_in) {
        // No server webhook here: a submission ends a batch only when each task it adds
        // is after one that already failed; the batch's own webhook still hears of it.
        super::graph::write(tx, batch, specs, &ids, &edges, now, false).await?;
    }
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
    key: Vec<Option<&'a str>>,
    deps_open: Vec<i32>,
    /// NULL: 1 (see migration 0031).
    cost: Vec<Option<i32>>,
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
            key: Vec::with_capacity(n),
            deps_open: Vec::with_capacity(n),
            cost: Vec::with_capacity(n),
        }
    }
}

pub(super) async fn get(store: &PostgresStore, task: TaskId) -> StoreResult<TaskInfo> {
    let client = store.client(Commit::Durable).await?;
    info(&client, task).await
}

pub(super) async fn info(tx: &impl GenericClient, task: TaskId) -> StoreResult<TaskInfo> {
    let r = tx
        .row_opt(include_str!("sql/task_get.sql"), &[&task])
        .await?
        .ok_or_else(|| not_found("task", task))?;
    Ok(row(&r))
}

/// A task from a row of the columns of `sql/task_get.sql`.
pub(super) fn row(r: &tokio_postgres::Row) -> TaskInfo {
    TaskInfo {
        id: r.get(0),
        batch: r.get(1),
        module: digest_of(r.get(2)),
        module_name: r.get(15),
        order: r.get(3),
        group: r.get(4),
        priority: r.get(5),
        state: TaskState::from_code(r.get::<_, i32>(6).into()).unwrap_or(TaskState::Failed),
        attempts: r.get::<_, i32>(7) as u32,
        max_attempts: r.get::<_, i32>(8) as u32,
        submitted_at: r.get(9),
        due_at: r.get(14),
        ended_at: r.get(10),
        outcome: r.get::<_, Option<String>>(11).and_then(|o| o.parse().ok()),
        error: r.get(12),
        error_size: r.get::<_, Option<i32>>(17).map(|n| n as u64),
        output_size: r.get::<_, Option<i32>>(13).map(|n| n as u64),
        input_size: r.get::<_, i32>(16) as u64,
        key: r.get(18),
        cost: r.get::<_, i32>(19) as u32,
    }
}

pub(super) async fn output(store: &PostgresStore, task: TaskId) -> StoreResult<Option<Vec<u8>>> {
    let client = store.client(Commit::Durable).await?;
    client
        .row_opt("SELECT output FROM tasks WHERE id = $1", &[&task])
        .await?
        .map(|r| r.get(0))
        .ok_or_else(|| not_found("task", task))
}

/// A task's input, as it was submitted.
pub(super) async fn input(store: &PostgresStore, task: TaskId) -> StoreResult<Vec<u8>> {
    let client = store.client(Commit::Durable).await?;
    client
        .row_opt("SELECT input FROM tasks WHERE id = $1", &[&task])
        .await?
        .map(|r| r.get(0))
        .ok_or_else(|| not_found("task", task))
}

pub(super) async fn set_priority(
    store: &PostgresStore,
    task: TaskId,
    priority: i32,
) -> StoreResult<()> {
    transaction!(store, Commit::Durable, |tx| {
        let sql = include_str!("sql/task_set_priority.sql");
        if set_pending_priority(tx, sql, task, priority).await? == 0 {
            let state = info(tx, task).await?.state;
            return Err(errors::priority_of_started(task, state));
        }
        store.notify(tx, "r").await?;
        Ok(())
    })
}

/// Runs `sql`, which sets the priority `$1` of the tasks not started among those `$2`
/// names (`sql/task_set_priority.sql`, `sql/batch_set_priority.sql`); returns how many
/// changed.
pub(super) async fn set_pending_priority(
    tx: &impl GenericClient,
    sql: &str,
    id: i64,
    priority: i32,
) -> StoreResult<u64> {
    let changed: i64 = tx
        .query_one(sql, &[&priority, &id])
        .await
        .map_err(pg)?
        .get(0);
    Ok(changed as u64)
}

/// Cancels a pending task at once; asks a claimed one to stop (its node learns it when it
/// renews its leases).
pub(super) async fn cancel(
    store: &PostgresStore,
    task: TaskId,
    now: Micros,
) -> StoreResult<CancelResult> {
    let now = store.db_time(now);
    transaction!(store, Commit::Durable, |tx| {
        let info = info(tx, task).await?;
        gate::lock(tx, info.batch).await?;
        let state: i32 = tx
            .row("SELECT state FROM tasks WHERE id = $1 FOR UPDATE", &[&task])
            .await?
            .get(0);
        match TaskState::from_code(state.into()) {
            Some(TaskState::Waiting | TaskState::Ready) => {
                tx.run(include_str!("sql/task_cancel.sql"), &[&now, &task])
                    .await?;
                let closed = gate::close(tx, &[(info.batch, info.order, 1)]).await?;
                super::hooks::batch_ends(tx, &closed, store.server_hook(), now).await?;
                let mut settled = CompleteResult::default();
                let server = store.server_hook();
                super::graph::settle(tx, vec![(task, false)], now, server, &mut settled).await?;
                store.notify_batches(tx, &[(task, info.batch)]).await?;
                Ok(CancelResult::Cancelled)
            }
            Some(TaskState::Running) => {
                tx.run(
                    "UPDATE tasks SET cancel_requested = TRUE WHERE id = $1",
                    &[&task],
                )
                .await?;
                store.notify(tx, "c").await?;
                Ok(CancelResult::Requested)
            }
            _ => Ok(CancelResult::AlreadyEnded),
        }
    })
}

/// A group's limit, its claimed tasks, and its pending ones (state 0 waiting, 1 ready).
pub(super) async fn group_get(store: &PostgresStore, key: String) -> StoreResult<GroupInfo> {
    let client = store.client(Commit::Durable).await?;
    // A paused group's limit is the one it gets back on resume.
    let stmt = client
        .prepare_cached(
            "SELECT CASE WHEN paused THEN resume_lim ELSE lim END, running, paused,
                    rate_limit, rate_period, rate_burst
             FROM groups WHERE key = $1",
        )
        .await
        .map_err(pg)?;
    let row = client
        .query_opt(&stmt, &[&key])
        .await
        .map_err(pg)?
        .ok_or_else(|| not_found("group", &key))?;
    let waiting: i64 = client
        .row(
            "SELECT COUNT(*) FROM tasks WHERE group_key = $1 AND state IN (0, 1)",
            &[&key],
        )
        .await?
        .get(0);
    Ok(GroupInfo {
        key,
        limit: row.get::<_, i32>(0) as u32,
        paused: row.get(2),
        running: row.get::<_, i32>(1).max(0) as u64,
        pending: waiting as u64,
        rate: stored_rate(&row, 3),
    })
}

/// A page of groups after the key `after`, idle ones too; only those `batch`'s tasks name
/// when given.
pub(super) async fn group_list(
    store: &PostgresStore,
    after: String,
    batch: Option<BatchId>,
    limit: usize,
) -> StoreResult<Vec<GroupRow>> {
    let client = store.client(Commit::Durable).await?;
    let rows = client
        .rows(
            include_str!("sql/group_list.sql"),
            &[&after, &batch, &(limit as i64)],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| GroupRow {
            key: r.get(0),
            limit: r.get::<_, i32>(1) as u32,
            paused: r.get(2),
            running: r.get::<_, i32>(3).max(0) as u64,
            rate: stored_rate(r, 4),
        })
        .collect())
}

/// A group's rate from its columns `rate_limit`, `rate_period`, `rate_burst`, read from
/// `at` on.
pub(super) fn stored_rate(row: &tokio_postgres::Row, at: usize) -> Option<GroupRate> {
    GroupRate::from_stored(
        row.get::<_, Option<i32>>(at).map(i64::from),
        row.get(at + 1),
        row.get::<_, Option<i32>>(at + 2).map(i64::from),
    )
}
