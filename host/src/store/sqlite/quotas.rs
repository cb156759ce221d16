//! A batch's quotas and usage in SQLite (`batch_quotas`): set when it opens, checked and
//! counted by submissions, charged by completions, given back by pruning. What fits is
//! decided by `store/quota.rs`.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::{internal, not_found};
use crate::store::quota::{self, Added, Room};
use crate::store::*;

/// Gives a new batch its quotas, with nothing stored yet.
pub(super) fn insert(tx: &Transaction<'_>, batch: BatchId, quotas: Quotas) -> StoreResult<()> {
    let [tasks, input, output, text, children, depth] = quotas.columns();
    tx.prepare_cached(
        "INSERT INTO batch_quotas (batch_id, quota_tasks, quota_input, quota_output, quota_text,
             quota_children, quota_depth)
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
    .map_err(internal)?
    .execute(params![batch, tasks, input, output, text, children, depth])
    .map_err(internal)?;
    Ok(())
}

/// The batch's quotas and what it stores; none for a batch without a row.
pub(super) fn get(conn: &Connection, batch: BatchId) -> StoreResult<Option<(Quotas, Usage)>> {
    conn.prepare_cached(
        "SELECT quota_tasks, quota_input, quota_output, quota_text,
                used_tasks, used_input, used_output, used_text, quota_children, quota_depth
         FROM batch_quotas WHERE batch_id = ?",
    )
    .map_err(internal)?
    .query_row([batch], |r| {
        Ok((
            Quotas::from_columns([
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(8)?,
                r.get(9)?,
            ]),
            Usage::from_columns([r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?]),
        ))
    })
    .optional()
    .map_err(internal)
}

/// Checks a submission against the batch's quotas and counts it in; refuses it, naming
/// the quota, when it does not fit.
pub(super) fn submit(tx: &Transaction<'_>, batch: BatchId, specs: &[TaskSpec]) -> StoreResult<()> {
    let (quotas, usage) = get(tx, batch)?.unwrap_or_default();
    let Added { tasks, input_bytes } = quota::check_submission(batch, quotas, usage, specs)?;
    tx.prepare_cached(
        "UPDATE batch_quotas SET used_tasks = used_tasks + ?, used_input = used_input + ?
         WHERE batch_id = ?",
    )
    .map_err(internal)?
    .execute(params![tasks, input_bytes, batch])
    .map_err(internal)?;
    Ok(())
}

/// Counts what `completions` store against their batches' quotas, first fitting the
/// attempts of a batch whose quotas they would pass (see [`Room::fit`]).
pub(super) fn charge(tx: &Transaction<'_>, completions: &mut [Completion]) -> StoreResult<()> {
    let mut per_batch: HashMap<BatchId, (i64, i64)> = HashMap::new();
    for c in completions.iter() {
        let sums = per_batch.entry(c.batch).or_default();
        sums.0 += quota::output_bytes(c) as i64;
        sums.1 += quota::text_bytes(c) as i64;
    }
    let mut fits = tx
        .prepare_cached(include_str!("sql/quota_charge.sql"))
        .map_err(internal)?;
    for (batch, (output, text)) in per_batch {
        if fits
            .execute(params![output, text, batch])
            .map_err(internal)?
            == 1
        {
            continue;
        }
        // Past a quota, or a batch gone (its completions are stale: nothing is written).
        let Some((quotas, usage)) = get(tx, batch)? else {
            continue;
        };
        let mut room = Room::left(quotas, usage);
        let (mut output, mut text) = (0, 0);
        for c in completions.iter_mut().filter(|c| c.batch == batch) {
            room.fit(batch, c);
            output += quota::output_bytes(c) as i64;
            text += quota::text_bytes(c) as i64;
        }
        add(tx, batch, output, text)?;
    }
    Ok(())
}

/// Gives back what a completion that turned out stale was charged.
pub(super) fn refund(tx: &Transaction<'_>, c: &Completion) -> StoreResult<()> {
    add(
        tx,
        c.batch,
        -(quota::output_bytes(c) as i64),
        -(quota::text_bytes(c) as i64),
    )
}

/// Adds to a batch's usage of output and text (less, when negative).
pub(super) fn add(tx: &Transaction<'_>, batch: BatchId, output: i64, text: i64) -> StoreResult<()> {
    tx.prepare_cached(
        "UPDATE batch_quotas SET used_output = max(used_output + ?, 0),
                                 used_text = max(used_text + ?, 0)
         WHERE batch_id = ?",
    )
    .map_err(internal)?
    .execute(params![output, text, batch])
    .map_err(internal)?;
    Ok(())
}

/// Changes the batch's quotas.
pub(super) fn set(tx: &Transaction<'_>, batch: BatchId, change: QuotaChange) -> StoreResult<()> {
    let (quotas, _) = get(tx, batch)?.ok_or_else(|| not_found("batch", batch))?;
    let [tasks, input, output, text, children, depth] = quotas.changed(change).columns();
    tx.execute(
        "UPDATE batch_quotas SET quota_tasks = ?, quota_input = ?, quota_output = ?, quota_text = ?,
             quota_children = ?, quota_depth = ?
         WHERE batch_id = ?",
        params![tasks, input, output, text, children, depth, batch],
    )
    .map_err(internal)?;
    Ok(())
}

/// Takes out of their batches' usage what the chunk that pruning deletes next stores.
pub(super) fn prune(tx: &Transaction<'_>, before: Micros, chunk: usize) -> StoreResult<()> {
    tx.execute(
        include_str!("sql/quota_prune.sql"),
        params![before, chunk as i64],
    )
    .map_err(internal)?;
    Ok(())
}
