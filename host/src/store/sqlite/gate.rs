//! Ordering gates in SQLite: `batch_orders` counts each batch's open tasks per order,
//! and the lowest order with open tasks is the gate. Only tasks at the gate are `ready`;
//! the others wait. The gate moves in the transaction that ends the last open task of
//! its order, which promotes the next order's tasks.

use rusqlite::{OptionalExtension, Transaction, params};

use super::internal;
use crate::store::{BatchId, Micros, StoreResult};

/// The batch's gate: its lowest order with open tasks.
pub(super) const CURRENT_SQL: &str = "SELECT MIN(ord) FROM batch_orders WHERE batch_id = ?";
/// A batch's tasks of one order in one state move to another, along tasks_batch: the list
/// index that leads with the batch would read the batch's tasks of every order. Tasks
/// that still wait for a dependency stay (see graph.rs).
pub(super) const MOVE_SQL: &str = "UPDATE tasks INDEXED BY tasks_batch SET state = ?1, listed = ?1 \
    WHERE batch_id = ?2 AND ord = ?3 AND state = ?4 AND deps_open = 0";
/// One order of a batch has `?` fewer open tasks.
pub(super) const CLOSE_SQL: &str =
    "UPDATE batch_orders SET open = open - ? WHERE batch_id = ? AND ord = ? RETURNING open";
/// An order of a batch with no open task left.
pub(super) const DROP_SQL: &str = "DELETE FROM batch_orders WHERE batch_id = ? AND ord = ?";

/// The batch's gate: its lowest order with open tasks.
pub(super) fn current(tx: &Transaction<'_>, batch: BatchId) -> StoreResult<Option<i64>> {
    tx.prepare_cached(CURRENT_SQL)
        .map_err(internal)?
        .query_row([batch], |r| r.get(0))
        .map_err(internal)
}

/// Puts the ready tasks (state 1) of `order` back to waiting (0): a lower order was
/// submitted before `order` started.
pub(super) fn demote(tx: &Transaction<'_>, batch: BatchId, order: i64) -> StoreResult<()> {
    tx.prepare_cached(MOVE_SQL)
        .map_err(internal)?
        .execute(params![0, batch, order, 1])
        .map_err(internal)?;
    Ok(())
}

/// Makes the waiting tasks (state 0) at the batch's gate ready (1); whether the batch has
/// no open order left: it has ended.
fn promote(tx: &Transaction<'_>, batch: BatchId) -> StoreResult<bool> {
    let Some(gate) = current(tx, batch)? else {
        return Ok(true);
    };
    tx.prepare_cached(MOVE_SQL)
        .map_err(internal)?
        .execute(params![1, batch, gate, 0])
        .map_err(internal)?;
    Ok(false)
}

/// Records that one task of `order` ended; moves the gate when it was the last. Whether
/// it was the batch's last open task: the batch has ended.
pub(super) fn close(tx: &Transaction<'_>, batch: BatchId, order: i64) -> StoreResult<bool> {
    close_many(tx, batch, order, 1)
}

/// Records that `count` tasks of `order` ended; moves the gate when they were the last.
/// Whether they were the batch's last open tasks: the batch has ended.
pub(super) fn close_many(
    tx: &Transaction<'_>,
    batch: BatchId,
    order: i64,
    count: i64,
) -> StoreResult<bool> {
    let open: Option<i64> = tx
        .prepare_cached(CLOSE_SQL)
        .map_err(internal)?
        .query_row(params![count, batch, order], |r| r.get(0))
        .optional()
        .map_err(internal)?;
    if open == Some(0) {
        tx.prepare_cached(DROP_SQL)
            .map_err(internal)?
            .execute(params![batch, order])
            .map_err(internal)?;
        return promote(tx, batch);
    }
    Ok(false)
}

/// Cancels every pending task of a batch, then counts its open orders again. Returns how
/// many it cancelled, and whether that ended the batch (none of its tasks runs).
pub(super) fn cancel_pending(
    tx: &Transaction<'_>,
    batch: BatchId,
    now: Micros,
    reason: &str,
) -> StoreResult<(u64, bool)> {
    let cancelled = tx
        .prepare_cached(include_str!("sql/gate_cancel_pending.sql"))
        .map_err(internal)?
        .execute(params![now, reason, batch])
        .map_err(internal)?;
    if cancelled > 0 {
        tx.prepare_cached("DELETE FROM batch_orders WHERE batch_id = ?")
            .map_err(internal)?
            .execute([batch])
            .map_err(internal)?;
        tx.prepare_cached(include_str!("sql/gate_recount.sql"))
            .map_err(internal)?
            .execute([batch])
            .map_err(internal)?;
        return Ok((cancelled as u64, current(tx, batch)?.is_none()));
    }
    Ok((0, false))
}
