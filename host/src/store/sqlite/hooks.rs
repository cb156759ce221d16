//! The webhook outbox in SQLite: events written in the transaction that ends a task or
//! its batch, and claimed, retried and deleted by the node's sender (see
//! [`crate::store::webhook`]).

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::internal;
use crate::store::*;

/// Writes a batch's end for its listeners; whether one was written.
pub(super) fn batch_ended(
    tx: &Transaction<'_>,
    batch: BatchId,
    server: bool,
    now: Micros,
) -> StoreResult<bool> {
    write(
        tx,
        batch,
        None,
        HookKind::BatchEnded,
        None,
        None,
        server,
        now,
    )
}

/// Writes the deliveries `kind` of `batch` owes (the server's when `server`, the batch's
/// own when it has one); whether any was written. The caller writes an event only when
/// someone may listen, or when it did not read the batch's row anyway.
#[allow(clippy::too_many_arguments)]
pub(super) fn write(
    tx: &Transaction<'_>,
    batch: BatchId,
    task: Option<TaskId>,
    kind: HookKind,
    outcome: Option<&str>,
    error: Option<&str>,
    server: bool,
    now: Micros,
) -> StoreResult<bool> {
    let written = tx
        .prepare_cached(include_str!("sql/hook_insert.sql"))
        .map_err(internal)?
        .execute(params![
            batch,
            task,
            kind.as_str(),
            outcome,
            event_error(error),
            now,
            server,
            MAX_PENDING_PER_BATCH
        ])
        .map_err(internal)?;
    Ok(written > 0)
}

/// Claims due events for one try each (see [`Store::hook_claim`]).
pub(super) fn claim(
    tx: &Transaction<'_>,
    now: Micros,
    hold_until: Micros,
    max: usize,
    server: bool,
) -> StoreResult<HookClaim> {
    let mut events = Vec::new();
    {
        let mut stmt = tx
            .prepare_cached(include_str!("sql/hook_claim.sql"))
            .map_err(internal)?;
        let mut rows = stmt
            .query(params![now, hold_until, max as i64, server])
            .map_err(internal)?;
        while let Some(r) = rows.next().map_err(internal)? {
            let kind: String = r.get(3).map_err(internal)?;
            let url: Option<String> = r.get(4).map_err(internal)?;
            let secret: Option<String> = r.get(5).map_err(internal)?;
            let Some(kind) = HookKind::parse(&kind) else {
                continue;
            };
            events.push(HookEvent {
                id: r.get(0).map_err(internal)?,
                batch: r.get(1).map_err(internal)?,
                task: r.get(2).map_err(internal)?,
                kind,
                hook: url.map(|url| BatchHook {
                    url,
                    sealed_secret: secret.unwrap_or_default(),
                }),
                outcome: r.get(6).map_err(internal)?,
                error: r.get(7).map_err(internal)?,
                created_at: r.get(8).map_err(internal)?,
                tries: r.get(9).map_err(internal)?,
                body: r.get(10).map_err(internal)?,
            });
        }
    }
    let next_due = next_due(tx, server)?;
    Ok(HookClaim { events, next_due })
}

/// When the next event falls due (the server's counted only when `server`).
fn next_due(conn: &Connection, server: bool) -> StoreResult<Option<Micros>> {
    conn.prepare_cached(
        "SELECT MIN(due_at) FROM webhook_events \
         WHERE url IS NOT NULL OR ?",
    )
    .map_err(internal)?
    .query_row([server], |r| r.get(0))
    .optional()
    .map(Option::flatten)
    .map_err(internal)
}

pub(super) fn done(tx: &Transaction<'_>, id: i64) -> StoreResult<()> {
    tx.prepare_cached("DELETE FROM webhook_events WHERE id = ?")
        .map_err(internal)?
        .execute([id])
        .map_err(internal)?;
    Ok(())
}

pub(super) fn retry(tx: &Transaction<'_>, id: i64, due: Micros, body: Vec<u8>) -> StoreResult<()> {
    tx.prepare_cached("UPDATE webhook_events SET due_at = ?, body = ? WHERE id = ?")
        .map_err(internal)?
        .execute(params![due, body, id])
        .map_err(internal)?;
    Ok(())
}
