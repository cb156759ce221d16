//! Batches: opening, handles, sealing, priority, cancellation and release, and what a
//! batch reports (its settings and its tasks counted per state).

use deadpool_postgres::GenericClient;

use super::cached::Cached;
use super::tasks::set_pending_priority;
use super::{Commit, PostgresStore, gate, not_found, pg, to_i32};
use crate::store::*;

pub(super) async fn open(
    store: &PostgresStore,
    spec: BatchSpec,
    handle_hash: [u8; 32],
    now: Micros,
) -> StoreResult<BatchInfo> {
    let now = store.db_time(now);
    transaction!(store, Commit::Durable, |tx| {
        let id = insert(tx, &spec, &handle_hash, now).await?;
        info(tx, id).await
    })
}

/// Opens a batch within the transaction `tx`; `now` is the database's clock.
pub(super) async fn open_in(
    tx: &impl GenericClient,
    spec: &BatchSpec,
    handle_hash: [u8; 32],
    now: Micros,
) -> StoreResult<BatchInfo> {
    let id = insert(tx, spec, &handle_hash, now).await?;
    info(tx, id).await
}

/// Inserts a batch; returns its id. `now` is in database time.
pub(super) async fn insert(
    tx: &impl GenericClient,
    spec: &BatchSpec,
    handle_hash: &[u8; 32],
    now: Micros,
) -> StoreResult<BatchId> {
    let max_parallel = spec.max_parallel.map(to_i32);
    let halt = spec.failure_policy == FailurePolicy::Halt;
    let id: BatchId = tx
        .row("INSERT INTO batches (handle_hash, name, priority, max_parallel, halt_on_failure, created_at,
                                  webhook_url, webhook_secret, tenant_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id", &[
                &&handle_hash[..],
                &spec.name,
                &spec.priority,
                &max_parallel,
                &halt,
                &now,
                &spec.webhook.as_ref().map(|h| &h.url),
                &spec.webhook.as_ref().map(|h| &h.sealed_secret),
                &spec.tenant,
            ])
.await?
        .get(0);
    super::grants::insert(tx, id, spec).await?;
    super::quotas::insert(tx, id, spec.quotas).await?;
    Ok(id)
}

pub(super) async fn set_handle(
    store: &PostgresStore,
    batch: BatchId,
    handle_hash: [u8; 32],
) -> StoreResult<()> {
    transaction!(store, Commit::Durable, |tx| {
        match tx
            .run(
                "UPDATE batches SET handle_hash = $1 WHERE id = $2",
                &[&&handle_hash[..], &batch],
            )
            .await?
        {
            0 => Err(not_found("batch", batch)),
            _ => Ok(()),
        }
    })
}

pub(super) async fn get(store: &PostgresStore, batch: BatchId) -> StoreResult<BatchInfo> {
    let client = store.client(Commit::Durable).await?;
    info(&client, batch).await
}

/// How many of the batch's tasks have not ended, from its per-order counts.
pub(super) async fn open_count(store: &PostgresStore, batch: BatchId) -> StoreResult<u64> {
    let client = store.client(Commit::Durable).await?;
    let stmt = client
        .prepare_cached(
            "SELECT coalesce(SUM(open), 0)::bigint FROM batch_orders WHERE batch_id = $1",
        )
        .await
        .map_err(pg)?;
    let open: i64 = client.query_one(&stmt, &[&batch]).await.map_err(pg)?.get(0);
    Ok(open.max(0) as u64)
}

pub(super) async fn authorize(
    store: &PostgresStore,
    batch: BatchId,
    key: BatchKey,
) -> StoreResult<Option<TenantId>> {
    let client = store.client(Commit::Durable).await?;
    let stored: Option<(Vec<u8>, Option<TenantId>)> = client
        .row_opt(
            "SELECT handle_hash, tenant_id FROM batches WHERE id = $1",
            &[&batch],
        )
        .await?
        .map(|r| (r.get(0), r.get(1)));
    match stored {
        None => Err(not_found("batch", batch)),
        Some((handle, tenant)) if key.opens(&handle, tenant) => Ok(tenant),
        Some(_) => Err(StoreError::Forbidden(batch)),
    }
}

pub(super) async fn tenant(store: &PostgresStore, batch: BatchId) -> StoreResult<Option<TenantId>> {
    let client = store.client(Commit::Durable).await?;
    client
        .row_opt("SELECT tenant_id FROM batches WHERE id = $1", &[&batch])
        .await?
        .map(|r| r.get(0))
        .ok_or_else(|| not_found("batch", batch))
}

pub(super) async fn seal(store: &PostgresStore, batch: BatchId) -> StoreResult<()> {
    transaction!(store, Commit::Durable, |tx| {
        match tx
            .run("UPDATE batches SET sealed = TRUE WHERE id = $1", &[&batch])
            .await?
        {
            0 => Err(not_found("batch", batch)),
            _ => Ok(()),
        }
    })
}

/// Sets the batch's priority, and that of its tasks that have not started.
pub(super) async fn set_priority(
    store: &PostgresStore,
    batch: BatchId,
    priority: i32,
) -> StoreResult<u64> {
    transaction!(store, Commit::Durable, |tx| {
        if tx
            .run(
                "UPDATE batches SET priority = $1 WHERE id = $2",
                &[&priority, &batch],
            )
            .await?
            == 0
        {
            return Err(not_found("batch", batch));
        }
        let sql = include_str!("sql/batch_set_priority.sql");
        let changed = set_pending_priority(tx, sql, batch, priority).await?;
        store.notify(tx, "r").await?;
        Ok(changed)
    })
}

/// Cancels the batch's pending tasks, and asks its claimed ones (state 2) to stop.
pub(super) async fn cancel(store: &PostgresStore, batch: BatchId, now: Micros) -> StoreResult<u64> {
    let now = store.db_time(now);
    transaction!(store, Commit::Durable, |tx| {
        info(tx, batch).await?;
        let cancelled = gate::cancel_pending(tx, batch, now, "cancelled with its batch").await?;
        if cancelled > 0 {
            super::hooks::batch_ends(tx, &[batch], store.server_hook(), now).await?;
        }
        let running = tx
            .run(
                "UPDATE tasks SET cancel_requested = TRUE WHERE batch_id = $1 AND state = 2",
                &[&batch],
            )
            .await?;
        if cancelled > 0 {
            store.notify_batches(tx, &[(0, batch)]).await?;
        }
        if running > 0 {
            store.notify(tx, "c").await?;
        }
        Ok(cancelled)
    })
}

/// Deletes an ended batch with its tasks and their attempt records.
pub(super) async fn release(store: &PostgresStore, batch: BatchId) -> StoreResult<()> {
    transaction!(store, Commit::Durable, |tx| {
        gate::lock(tx, batch).await?;
        let info = info(tx, batch).await?;
        if !info.progress.is_done() {
            return Err(errors::batch_not_ended(
                batch,
                info.progress.total() - info.progress.ended(),
            ));
        }
        for sql in [
            "DELETE FROM attempts WHERE batch_id = $1",
            "DELETE FROM task_edges WHERE task_id IN (SELECT id FROM tasks WHERE batch_id = $1)",
            "DELETE FROM batch_fan_ins WHERE batch_id = $1",
            "DELETE FROM tasks WHERE batch_id = $1",
            "DELETE FROM batch_orders WHERE batch_id = $1",
            "DELETE FROM request_keys WHERE batch_id = $1",
            "DELETE FROM batch_grants WHERE batch_id = $1",
            "DELETE FROM batch_quotas WHERE batch_id = $1",
            "DELETE FROM batches WHERE id = $1",
        ] {
            tx.execute(sql, &[&batch]).await.map_err(pg)?;
        }
        Ok(())
    })
}

pub(super) async fn info(tx: &impl GenericClient, batch: BatchId) -> StoreResult<BatchInfo> {
    infos(tx, &[batch])
        .await?
        .pop()
        .ok_or_else(|| not_found("batch", batch))
}

/// The batches `ids` that exist, in that order, each with its progress
/// (`sql/batch_info.sql`).
pub(super) async fn infos(tx: &impl GenericClient, ids: &[BatchId]) -> StoreResult<Vec<BatchInfo>> {
    let rows = tx.rows(include_str!("sql/batch_info.sql"), &[&ids]).await?;
    let mut found = std::collections::HashMap::<BatchId, BatchInfo>::with_capacity(ids.len());
    for row in &rows {
        let batch = found.entry(row.get(0)).or_insert_with(|| settings(row));
        let state: Option<i32> = row.get(8);
        if let Some(state) = state.and_then(|s| TaskState::from_code(s.into())) {
            batch
                .progress
                .add(state, row.get::<_, i64>(9).max(0) as u64);
        }
    }
    Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
}

/// A batch's settings from its row's first columns (id, name, priority, max_parallel as
/// set, halt_on_failure, sealed, created_at, paused) and its quotas and usage (columns 10
/// to 17, 19 and 20 of `sql/batch_info.sql`) and its webhook's URL (18), its progress not
/// read.
fn settings(row: &tokio_postgres::Row) -> BatchInfo {
    BatchInfo {
        id: row.get(0),
        name: row.get(1),
        priority: row.get(2),
        max_parallel: row.get::<_, Option<i32>>(3).map(|n| n as u32),
        failure_policy: if row.get(4) {
            FailurePolicy::Halt
        } else {
            FailurePolicy::Continue
        },
        sealed: row.get(5),
        paused: row.get(7),
        created_at: row.get(6),
        progress: Progress::default(),
        webhook: row
            .get::<_, Option<String>>(18)
            .map(|url| WebhookView { url }),
        quotas: Quotas::from_columns([
            row.get(10),
            row.get(11),
            row.get(12),
            row.get(13),
            row.get(19),
            row.get(20),
        ]),
        usage: Usage::from_columns([
            row.get::<_, Option<i64>>(14).unwrap_or(0),
            row.get::<_, Option<i64>>(15).unwrap_or(0),
            row.get::<_, Option<i64>>(16).unwrap_or(0),
            row.get::<_, Option<i64>>(17).unwrap_or(0),
        ]),
    }
}
