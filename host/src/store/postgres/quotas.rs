//! A batch's quotas and usage in PostgreSQL (`batch_quotas`): set when it opens, checked
//! and counted by submissions, charged by completions, given back by pruning. What fits is
//! decided by `store/quota.rs`.
//!
//! Whatever writes usage locks the batch's row here before it takes the batch's gate lock,
//! so that submissions and completions of one batch never wait on each other in a cycle.

use std::collections::BTreeMap;

use deadpool_postgres::GenericClient;

use super::cached::Cached;
use super::{not_found, pg};
use crate::store::quota::{self, Room};
use crate::store::*;

/// Reads a batch's quotas and usage, locking its row: `$1` batch id.
pub(super) const LOCK_SQL: &str = "SELECT quota_tasks, quota_input, quota_output, quota_text,
        used_tasks, used_input, used_output, used_text, quota_children, quota_depth
    FROM batch_quotas WHERE batch_id = $1 FOR UPDATE";

/// Counts a submission in: `$1` tasks, `$2` bytes of input, `$3` batch id.
pub(super) const SUBMIT_SQL: &str = "UPDATE batch_quotas
    SET used_tasks = used_tasks + $1, used_input = used_input + $2 WHERE batch_id = $3";

/// Quotas and usage from a row of [`LOCK_SQL`].
pub(super) fn from_row(row: &tokio_postgres::Row) -> (Quotas, Usage) {
    (
        Quotas::from_columns([
            row.get(0),
            row.get(1),
            row.get(2),
            row.get(3),
            row.get(8),
            row.get(9),
        ]),
        Usage::from_columns([row.get(4), row.get(5), row.get(6), row.get(7)]),
    )
}

/// Gives a new batch its quotas, with nothing stored yet.
pub(super) async fn insert(
    tx: &impl GenericClient,
    batch: BatchId,
    quotas: Quotas,
) -> StoreResult<()> {
    let [tasks, input, output, text, children, depth] = quotas.columns();
    tx.run(
        "INSERT INTO batch_quotas (batch_id, quota_tasks, quota_input, quota_output, quota_text,
             quota_children, quota_depth)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &[&batch, &tasks, &input, &output, &text, &children, &depth],
    )
    .await?;
    Ok(())
}

/// Counts what `completions` store against their batches' quotas, first fitting the
/// attempts of a batch whose quotas they would pass (see [`Room::fit`]).
pub(super) async fn charge(
    tx: &impl GenericClient,
    completions: &mut [Completion],
) -> StoreResult<()> {
    if completions.is_empty() {
        return Ok(());
    }
    let mut per_batch: BTreeMap<BatchId, (i64, i64)> = BTreeMap::new();
    for c in completions.iter() {
        let sums = per_batch.entry(c.batch).or_default();
        sums.0 += quota::output_bytes(c) as i64;
        sums.1 += quota::text_bytes(c) as i64;
    }
    let ids: Vec<i64> = per_batch.keys().copied().collect();
    let outputs: Vec<i64> = per_batch.values().map(|s| s.0).collect();
    let texts: Vec<i64> = per_batch.values().map(|s| s.1).collect();
    let stmt = tx
        .prepare_cached(include_str!("sql/quota_charge.sql"))
        .await
        .map_err(pg)?;
    let charged: Vec<BatchId> = tx
        .query(&stmt, &[&ids, &outputs, &texts])
        .await
        .map_err(pg)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if charged.len() == ids.len() {
        return Ok(());
    }
    for batch in ids.into_iter().filter(|id| !charged.contains(id)) {
        // Past a quota, or a batch gone (its completions are stale: nothing is written).
        let Some(row) = tx.query_opt(LOCK_SQL, &[&batch]).await.map_err(pg)? else {
            continue;
        };
        let (quotas, usage) = from_row(&row);
        let mut room = Room::left(quotas, usage);
        let (mut output, mut text) = (0, 0);
        for c in completions.iter_mut().filter(|c| c.batch == batch) {
            room.fit(batch, c);
            output += quota::output_bytes(c) as i64;
            text += quota::text_bytes(c) as i64;
        }
        add(tx, batch, output, text).await?;
    }
    Ok(())
}

/// Gives back what a completion that turned out stale was charged.
pub(super) async fn refund(tx: &impl GenericClient, c: &Completion) -> StoreResult<()> {
    add(
        tx,
        c.batch,
        -(quota::output_bytes(c) as i64),
        -(quota::text_bytes(c) as i64),
    )
    .await
}

/// Adds to a batch's usage of output and text (less, when negative).
pub(super) async fn add(
    tx: &impl GenericClient,
    batch: BatchId,
    output: i64,
    text: i64,
) -> StoreResult<()> {
    tx.run(
        "UPDATE batch_quotas SET used_output = greatest(used_output + $1, 0),
                                 used_text = greatest(used_text + $2, 0)
         WHERE batch_id = $3",
        &[&output, &text, &batch],
    )
    .await?;
    Ok(())
}

/// Changes the batch's quotas.
pub(super) async fn set(
    tx: &impl GenericClient,
    batch: BatchId,
    change: QuotaChange,
) -> StoreResult<()> {
    let row = tx
        .query_opt(LOCK_SQL, &[&batch])
        .await
        .map_err(pg)?
        .ok_or_else(|| not_found("batch", batch))?;
    let [tasks, input, output, text, children, depth] = from_row(&row).0.changed(change).columns();
    tx.run(
        "UPDATE batch_quotas SET quota_tasks = $1, quota_input = $2, quota_output = $3,
             quota_text = $4, quota_children = $5, quota_depth = $6
         WHERE batch_id = $7",
        &[&tasks, &input, &output, &text, &children, &depth, &batch],
    )
    .await?;
    Ok(())
}

/// Takes out of their batches' usage what the tasks `ids`, pruned next, store.
pub(super) async fn prune(tx: &impl GenericClient, ids: &[i64]) -> StoreResult<()> {
    tx.run(include_str!("sql/quota_prune.sql"), &[&ids]).await?;
    Ok(())
}
