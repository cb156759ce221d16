//! Pausing and limits changed after the fact: a batch paused or resumed, its
//! `max_parallel` changed, a group paused or resumed, a group's limit set.
//!
//! A pause is a limit of 0 (`batches.max_parallel`, `groups.lim`), which claims read as no
//! room, with the limit to restore kept beside: the claim needs no rule of its own for
//! pauses. A group's row is locked by every claim that takes from it, so its change waits
//! for those under way. A batch's `running` is kept only while it has a `max_parallel`: a
//! change takes the batch's gate lock, which waits for every claim holding it shared and
//! turns later claims away until the change commits, then counts the batch's claimed
//! tasks again. Claims check, under that gate lock, that a batch they take from without
//! holding its counter has no `max_parallel` (see `claim.rs`). Every change sends
//! `Reclaim`: nodes hand back what they reserved and claim anew.

use deadpool_postgres::GenericClient;

use super::cached::Cached;
use super::{Commit, PostgresStore, gate, not_found, pg, to_i32};
use crate::store::*;

/// Runs `sql` (`$1` the new setting, `$2` the batch) on the batch under its gate lock and
/// with its row locked.
async fn change_batch<T>(
    store: &PostgresStore,
    batch: BatchId,
    sql: &'static str,
    value: T,
) -> StoreResult<()>
where
    T: tokio_postgres::types::ToSql + Sync + Send,
{
    transaction!(store, Commit::Durable, |tx| {
        gate::lock(tx, batch).await?;
        tx.row_opt("SELECT 1 FROM batches WHERE id = $1 FOR UPDATE", &[&batch])
            .await?
            .ok_or_else(|| not_found("batch", batch))?;
        tx.execute(sql, &[&value, &batch]).await.map_err(pg)?;
        store.notify(tx, "r").await?;
        Ok(())
    })
}

pub(super) async fn batch_set_paused(
    store: &PostgresStore,
    batch: BatchId,
    paused: bool,
) -> StoreResult<()> {
    change_batch(
        store,
        batch,
        include_str!("sql/batch_set_paused.sql"),
        paused,
    )
    .await
}

pub(super) async fn batch_set_max_parallel(
    store: &PostgresStore,
    batch: BatchId,
    max_parallel: Option<u32>,
) -> StoreResult<()> {
    let max_parallel = max_parallel.map(to_i32);
    let sql = include_str!("sql/batch_set_max_parallel.sql");
    change_batch(store, batch, sql, max_parallel).await
}

/// Sets how many of a group's tasks may run at once, creating the group if needed.
pub(super) async fn group_set_limit(
    store: &PostgresStore,
    key: String,
    limit: u32,
) -> StoreResult<()> {
    let limit = to_i32(limit);
    transaction!(store, Commit::Durable, |tx| {
        tx.run(include_str!("sql/group_set_limit.sql"), &[&key, &limit])
            .await?;
        store.notify(tx, "r").await?;
        Ok(())
    })
}

pub(super) async fn group_set_paused(
    store: &PostgresStore,
    key: String,
    paused: bool,
) -> StoreResult<()> {
    transaction!(store, Commit::Durable, |tx| {
        tx.run(include_str!("sql/group_set_paused.sql"), &[&key, &paused])
            .await?;
        store.notify(tx, "r").await?;
        Ok(())
    })
}

/// Sets or removes a group's rate, creating the group if needed; claimers look again, as
/// a rate removed or raised may let tasks through now.
pub(super) async fn group_set_rate(
    store: &PostgresStore,
    key: String,
    rate: Option<GroupRate>,
) -> StoreResult<()> {
    let (limit, period, burst) = GroupRate::columns(rate);
    let (limit, burst) = (limit.map(|l| l as i32), burst.map(|b| b as i32));
    transaction!(store, Commit::Durable, |tx| {
        tx.run(
            include_str!("sql/group_set_rate.sql"),
            &[&key, &limit, &period, &burst],
        )
        .await?;
        store.notify(tx, "w").await?;
        Ok(())
    })
}
