//! Batches: opening, sealing, handles, priority, cancellation and release, and what a
//! batch reports with its progress.

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::log::count_states;
use super::{gate, internal, not_found};
use crate::store::*;

pub(super) fn open(
    tx: &Transaction<'_>,
    spec: BatchSpec,
    handle_hash: [u8; 32],
    now: Micros,
) -> StoreResult<BatchInfo> {
    tx.execute(
        "INSERT INTO batches (handle_hash, name, priority, max_parallel, halt_on_failure, created_at,
                              webhook_url, webhook_secret, tenant_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        params![
            handle_hash,
            spec.name,
            spec.priority,
            spec.max_parallel,
            spec.failure_policy == FailurePolicy::Halt,
            now,
            spec.webhook.as_ref().map(|h| &h.url),
            spec.webhook.as_ref().map(|h| &h.sealed_secret),
            spec.tenant,
        ],
    )
    .map_err(internal)?;
    let id = tx.last_insert_rowid();
    super::grants::insert(tx, id, &spec)?;
    super::quotas::insert(tx, id, spec.quotas)?;
    get(tx, id)
}

pub(super) fn set_handle(
    tx: &Transaction<'_>,
    batch: BatchId,
    handle_hash: [u8; 32],
) -> StoreResult<()> {
    match tx
        .execute(
            "UPDATE batches SET handle_hash = ? WHERE id = ?",
            params![handle_hash, batch],
        )
        .map_err(internal)?
    {
        0 => Err(not_found("batch", batch)),
        _ => Ok(()),
    }
}

/// The batch with its tasks counted per state.
pub(super) fn get(conn: &Connection, batch: BatchId) -> StoreResult<BatchInfo> {
    let mut info = conn
        .prepare_cached(
            // A paused batch's max_parallel is the one it gets back on resume.
            "SELECT id, name, priority,
                    CASE WHEN paused THEN resume_max_parallel ELSE max_parallel END,
                    halt_on_failure, sealed, created_at, paused, webhook_url
             FROM batches WHERE id = ?",
        )
        .map_err(internal)?
        .query_row([batch], |row| {
            Ok(BatchInfo {
                id: row.get(0)?,
                name: row.get(1)?,
                priority: row.get(2)?,
                max_parallel: row.get(3)?,
                failure_policy: if row.get(4)? {
                    FailurePolicy::Halt
                } else {
                    FailurePolicy::Continue
                },
                sealed: row.get(5)?,
                paused: row.get(7)?,
                created_at: row.get(6)?,
                progress: Progress::default(),
                webhook: row
                    .get::<_, Option<String>>(8)?
                    .map(|url| WebhookView { url }),
                quotas: Quotas::default(),
                usage: Usage::default(),
            })
        })
        .optional()
        .map_err(internal)?
        .ok_or_else(|| not_found("batch", batch))?;
    (info.quotas, info.usage) = super::quotas::get(conn, batch)?.unwrap_or_default();
    info.progress = count_states(
        conn,
        include_str!("sql/batch_counts.sql"),
        [batch, now_micros()],
    )?;
    Ok(info)
}

/// How many of the batch's tasks have not ended.
pub(super) fn open_count(conn: &Connection, batch: BatchId) -> StoreResult<u64> {
    conn.prepare_cached("SELECT coalesce(SUM(open), 0) FROM batch_orders WHERE batch_id = ?")
        .map_err(internal)?
        .query_row([batch], |r| r.get(0))
        .map_err(internal)
}

/// Whether `key` opens the batch; the tenant it belongs to if it does.
pub(super) fn authorize(
    conn: &Connection,
    batch: BatchId,
    key: BatchKey,
) -> StoreResult<Option<TenantId>> {
    let stored: Option<(Vec<u8>, Option<TenantId>)> = conn
        .prepare_cached("SELECT handle_hash, tenant_id FROM batches WHERE id = ?")
        .map_err(internal)?
        .query_row([batch], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .map_err(internal)?;
    match stored {
        None => Err(not_found("batch", batch)),
        Some((handle, tenant)) if key.opens(&handle, tenant) => Ok(tenant),
        Some(_) => Err(StoreError::Forbidden(batch)),
    }
}

pub(super) fn tenant(conn: &Connection, batch: BatchId) -> StoreResult<Option<TenantId>> {
    conn.prepare_cached("SELECT tenant_id FROM batches WHERE id = ?")
        .map_err(internal)?
        .query_row([batch], |r| r.get(0))
        .optional()
        .map_err(internal)?
        .ok_or_else(|| not_found("batch", batch))
}

pub(super) fn seal(tx: &Transaction<'_>, batch: BatchId) -> StoreResult<()> {
    match tx
        .execute("UPDATE batches SET sealed = 1 WHERE id = ?", [batch])
        .map_err(internal)?
    {
        0 => Err(not_found("batch", batch)),
        _ => Ok(()),
    }
}

/// Sets the batch's priority, and that of its tasks that have not started; returns how
/// many tasks changed.
pub(super) fn set_priority(
    tx: &Transaction<'_>,
    batch: BatchId,
    priority: i32,
) -> StoreResult<u64> {
    if tx
        .execute(
            "UPDATE batches SET priority = ? WHERE id = ?",
            params![priority, batch],
        )
        .map_err(internal)?
        == 0
    {
        return Err(not_found("batch", batch));
    }
    let changed = tx
        .execute(
            include_str!("sql/batch_set_priority.sql"),
            params![priority, batch],
        )
        .map_err(internal)?;
    Ok(changed as u64)
}

/// Cancels the batch's pending tasks and asks its claimed ones to stop; returns how many
/// were cancelled.
pub(super) fn cancel(
    tx: &Transaction<'_>,
    batch: BatchId,
    now: Micros,
    server: bool,
) -> StoreResult<u64> {
    get(tx, batch)?;
    let (cancelled, ended) = gate::cancel_pending(tx, batch, now, "cancelled with its batch")?;
    if ended {
        let kind = HookKind::BatchEnded;
        super::hooks::write(tx, batch, None, kind, None, None, server, now)?;
    }
    // State 2: claimed.
    tx.execute(
        "UPDATE tasks SET cancel_requested = 1 WHERE batch_id = ? AND listed = 1 AND state = 2",
        [batch],
    )
    .map_err(internal)?;
    Ok(cancelled)
}

/// Deletes an ended batch with everything it owns.
pub(super) fn release(tx: &Transaction<'_>, batch: BatchId) -> StoreResult<()> {
    let info = get(tx, batch)?;
    if !info.progress.is_done() {
        return Err(errors::batch_not_ended(
            batch,
            info.progress.total() - info.progress.ended(),
        ));
    }
    // Everything the batch owns. Ids are never reused (see
    // migrations/0004_ids_never_reused.sql), so nothing left behind could reach a later
    // batch anyway.
    for sql in [
        "DELETE FROM attempts WHERE batch_id = ?",
        "DELETE FROM tasks WHERE batch_id = ?",
        "DELETE FROM batch_orders WHERE batch_id = ?",
        "DELETE FROM request_keys WHERE batch_id = ?",
        "DELETE FROM batch_grants WHERE batch_id = ?",
        "DELETE FROM batch_quotas WHERE batch_id = ?",
        "DELETE FROM batches WHERE id = ?",
    ] {
        tx.execute(sql, [batch]).map_err(internal)?;
    }
    Ok(())
}
