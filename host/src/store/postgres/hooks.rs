//! The webhook outbox in PostgreSQL: events written in the transaction that ends a task
//! or its batch, and claimed (`FOR UPDATE SKIP LOCKED`), retried and deleted by the
//! senders of every node (see [`crate::store::webhook`]).

use deadpool_postgres::GenericClient;

use super::cached::Cached;
use super::{Commit, PostgresStore, pg};
use crate::store::*;

/// Writes the deliveries `kind` of `batch` owes (the server's when `server`, the batch's
/// own when it has one); whether any was written.
#[allow(clippy::too_many_arguments)]
pub(super) async fn write(
    tx: &impl GenericClient,
    batch: BatchId,
    task: Option<TaskId>,
    kind: HookKind,
    outcome: Option<&str>,
    error: Option<&str>,
    server: bool,
    now: Micros,
) -> StoreResult<bool> {
    let stmt = tx
        .prepare_cached(include_str!("sql/hook_insert.sql"))
        .await
        .map_err(pg)?;
    let written = tx
        .execute(
            &stmt,
            &[
                &batch,
                &task,
                &kind.as_str(),
                &outcome,
                &event_error(error),
                &now,
                &server,
                &MAX_PENDING_PER_BATCH,
            ],
        )
        .await
        .map_err(pg)?;
    Ok(written > 0)
}

/// Writes the end of each of `batches` (whose orders closed in this transaction) that has
/// no open order left; whether any was written.
pub(super) async fn batch_ends(
    tx: &impl GenericClient,
    batches: &[BatchId],
    server: bool,
    now: Micros,
) -> StoreResult<bool> {
    if batches.is_empty() {
        return Ok(false);
    }
    let stmt = tx
        .prepare_cached(include_str!("sql/hook_batch_ends.sql"))
        .await
        .map_err(pg)?;
    let written = tx
        .execute(&stmt, &[&batches, &now, &server])
        .await
        .map_err(pg)?;
    Ok(written > 0)
}

pub(super) async fn claim(
    store: &PostgresStore,
    now: Micros,
    hold_until: Micros,
    max: usize,
    server: bool,
) -> StoreResult<HookClaim> {
    let (now, hold_until) = (store.db_time(now), store.db_time(hold_until));
    let max = max as i64;
    transaction!(store, Commit::Bookkeeping, |tx| {
        let rows = tx
            .rows(
                include_str!("sql/hook_claim.sql"),
                &[&now, &hold_until, &max, &server],
            )
            .await?;
        let events = rows
            .iter()
            .filter_map(|r| {
                let kind = HookKind::parse(r.get(3))?;
                let url: Option<String> = r.get(4);
                let secret: Option<String> = r.get(5);
                Some(HookEvent {
                    id: r.get(0),
                    batch: r.get(1),
                    task: r.get(2),
                    kind,
                    hook: url.map(|url| BatchHook {
                        url,
                        sealed_secret: secret.unwrap_or_default(),
                    }),
                    outcome: r.get(6),
                    error: r.get(7),
                    created_at: store.local_time(r.get(8)),
                    tries: r.get::<_, i32>(9).max(0) as u32,
                    body: r.get(10),
                })
            })
            .collect();
        let next_due: Option<Micros> = tx
            .row(
                "SELECT MIN(due_at) FROM webhook_events WHERE url IS NOT NULL OR $1",
                &[&server],
            )
            .await?
            .get(0);
        Ok(HookClaim {
            events,
            next_due: next_due.map(|due| store.local_time(due)),
        })
    })
}

pub(super) async fn done(store: &PostgresStore, id: i64) -> StoreResult<()> {
    transaction!(store, Commit::Durable, |tx| {
        tx.run("DELETE FROM webhook_events WHERE id = $1", &[&id])
            .await?;
        Ok(())
    })
}

pub(super) async fn retry(
    store: &PostgresStore,
    id: i64,
    due: Micros,
    body: Vec<u8>,
) -> StoreResult<()> {
    let due = store.db_time(due);
    transaction!(store, Commit::Durable, |tx| {
        tx.run(
            "UPDATE webhook_events SET due_at = $1, body = $2 WHERE id = $3",
            &[&due, &body, &id],
        )
        .await?;
        Ok(())
    })
}
