//! Ordering gates in PostgreSQL: `batch_orders` counts each batch's open tasks per order;
//! the lowest order with open tasks is the gate, and only tasks at the gate are ready.
//!
//! Whoever moves a gate holds the batch's advisory lock exclusively: a submission (which
//! may lower it), the transaction that closes an order (which promotes the next), and a
//! cancellation. Claims hold it shared and never wait for it. The lock's class is the id of
//! the schema's `tasks` table, so that stores in other schemas of the same database never
//! contend for a gate.

use deadpool_postgres::GenericClient;

use super::cached::Cached;
use super::pg;
use crate::store::{BatchId, Micros, StoreResult, TenantId};

/// The advisory lock key of a batch (ids past 2^31 share keys: coarser, still correct).
pub(super) fn key(batch: BatchId) -> i32 {
    (batch % i64::from(i32::MAX)) as i32
}

/// Takes the gate lock of the batch whose [`key`] is `$1` exclusively.
pub(super) const LOCK_SQL: &str = "SELECT pg_advisory_xact_lock('tasks'::regclass::oid::int, $1)";

/// The gate of batch `$1`: its lowest order with open tasks.
pub(super) const CURRENT_SQL: &str =
    "SELECT MIN(ord) FROM batch_orders WHERE batch_id = $1 AND open > 0";

/// Counts tasks open in batch `$1` (of tenant `$4`): `$3[i]` more at order `$2[i]`.
pub(super) const OPEN_SQL: &str = include_str!("sql/submit_orders.sql");

/// Takes the batch's gate lock exclusively, waiting for claims and other writers.
pub(super) async fn lock(tx: &impl GenericClient, batch: BatchId) -> StoreResult<()> {
    let stmt = tx.prepare_cached(LOCK_SQL).await.map_err(pg)?;
    tx.execute(&stmt, &[&key(batch)]).await.map_err(pg)?;
    Ok(())
}

/// Of `batches`, those whose gate lock this claim now holds shared; the others are
/// changing their gate and are passed over.
pub(super) async fn try_share(
    tx: &impl GenericClient,
    batches: &[BatchId],
) -> StoreResult<Vec<BatchId>> {
    let keys: Vec<i32> = batches.iter().map(|&b| key(b)).collect();
    let stmt = tx
        .prepare_cached(
            "SELECT b FROM unnest($1::bigint[], $2::int[]) AS u(b, k)
             WHERE pg_try_advisory_xact_lock_shared('tasks'::regclass::oid::int, k)",
        )
        .await
        .map_err(pg)?;
    let rows = tx.query(&stmt, &[&batches, &keys]).await.map_err(pg)?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// The batch's gate: its lowest order with open tasks.
pub(super) async fn current(tx: &impl GenericClient, batch: BatchId) -> StoreResult<Option<i64>> {
    let stmt = tx.prepare_cached(CURRENT_SQL).await.map_err(pg)?;
    Ok(tx.query_one(&stmt, &[&batch]).await.map_err(pg)?.get(0))
}

/// The orders of tasks (one entry per task) and how many tasks each has, for [`OPEN_SQL`].
pub(super) fn per_order(orders: impl IntoIterator<Item = i64>) -> (Vec<i64>, Vec<i64>) {
    let mut per_order = std::collections::BTreeMap::<i64, i64>::new();
    for order in orders {
        *per_order.entry(order).or_default() += 1;
    }
    per_order.into_iter().unzip()
}

/// Counts a task open in the batch at each of `orders` (one entry per task): tasks
/// submitted, or run again.
pub(super) async fn open(
    tx: &impl GenericClient,
    batch: BatchId,
    tenant: Option<TenantId>,
    orders: impl IntoIterator<Item = i64>,
) -> StoreResult<()> {
    let (orders, counts) = per_order(orders);
    let stmt = tx.prepare_cached(OPEN_SQL).await.map_err(pg)?;
    tx.execute(&stmt, &[&batch, &orders, &counts, &tenant])
        .await
        .map_err(pg)?;
    Ok(())
}

/// Records that `count` tasks of `(batch, order)` ended, for each entry; where an order
/// closed, takes those batches' gate locks and promotes their next orders. Returns the
/// batches whose orders closed: those among them with no open order left have ended.
pub(super) async fn close(
    tx: &impl GenericClient,
    ended: &[(BatchId, i64, i64)],
) -> StoreResult<Vec<BatchId>> {
    if ended.is_empty() {
        return Ok(Vec::new());
    }
    // Summed per order (an UPDATE applies one row per target), in one order of locking
    // across transactions, which keeps them from deadlocking each other.
    let mut per_order = std::collections::BTreeMap::<(BatchId, i64), i64>::new();
    for &(batch, order, count) in ended {
        *per_order.entry((batch, order)).or_default() += count;
    }
    let mut batches = Vec::with_capacity(per_order.len());
    let mut orders = Vec::with_capacity(per_order.len());
    let mut counts = Vec::with_capacity(per_order.len());
    for ((batch, order), count) in per_order {
        batches.push(batch);
        orders.push(order);
        counts.push(count);
    }
    let stmt = tx
        .prepare_cached(include_str!("sql/gate_close.sql"))
        .await
        .map_err(pg)?;
    let mut closed: Vec<BatchId> = tx
        .query(&stmt, &[&batches, &orders, &counts])
        .await
        .map_err(pg)?
        .iter()
        .filter(|r| r.get::<_, i64>(1) <= 0)
        .map(|r| r.get(0))
        .collect();
    if closed.is_empty() {
        return Ok(closed);
    }
    closed.sort_unstable();
    closed.dedup();
    for &batch in &closed {
        lock(tx, batch).await?;
    }
    promote(tx, &closed).await?;
    Ok(closed)
}

/// Drops the closed orders of `batches` and makes the waiting tasks at their gates ready.
async fn promote(tx: &impl GenericClient, batches: &[BatchId]) -> StoreResult<()> {
    tx.run(
        "DELETE FROM batch_orders WHERE batch_id = ANY($1) AND open <= 0",
        &[&batches],
    )
    .await?;
    tx.run(include_str!("sql/gate_promote.sql"), &[&batches])
        .await?;
    Ok(())
}

/// Cancels every pending task of a batch, then counts its open orders again.
pub(super) async fn cancel_pending(
    tx: &impl GenericClient,
    batch: BatchId,
    now: Micros,
    reason: &str,
) -> StoreResult<u64> {
    lock(tx, batch).await?;
    let cancelled = tx
        .row(
            include_str!("sql/gate_cancel_pending.sql"),
            &[&now, &reason, &batch],
        )
        .await?
        .get::<_, i64>(0) as u64;
    if cancelled > 0 {
        tx.run("DELETE FROM batch_orders WHERE batch_id = $1", &[&batch])
            .await?;
        tx.run(include_str!("sql/gate_recount.sql"), &[&batch])
            .await?;
    }
    Ok(cancelled)
}
