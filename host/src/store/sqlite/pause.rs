//! Pausing and limits changed after the fact: a batch paused or resumed, its
//! `max_parallel` changed, a group paused or resumed, its rate set or removed.
//!
//! A pause is a limit of 0 (`batches.max_parallel`, `groups.lim`), which the claim reads as
//! no room, with the limit to restore kept beside: so the claim needs no rule of its own
//! for pauses. The tasks keep their places in the queue, and resume in order.

use rusqlite::{Transaction, params};

use super::{internal, not_found};
use crate::store::*;

pub(super) fn batch_set_paused(
    tx: &Transaction<'_>,
    batch: BatchId,
    paused: bool,
) -> StoreResult<()> {
    match tx
        .prepare_cached(include_str!("sql/batch_set_paused.sql"))
        .map_err(internal)?
        .execute(params![paused, batch])
        .map_err(internal)?
    {
        0 => Err(not_found("batch", batch)),
        _ => Ok(()),
    }
}

pub(super) fn batch_set_max_parallel(
    tx: &Transaction<'_>,
    batch: BatchId,
    max_parallel: Option<u32>,
) -> StoreResult<()> {
    match tx
        .prepare_cached(include_str!("sql/batch_set_max_parallel.sql"))
        .map_err(internal)?
        .execute(params![max_parallel, batch])
        .map_err(internal)?
    {
        0 => Err(not_found("batch", batch)),
        _ => Ok(()),
    }
}

pub(super) fn group_set_limit(tx: &Transaction<'_>, key: String, limit: u32) -> StoreResult<()> {
    tx.prepare_cached(include_str!("sql/group_set_limit.sql"))
        .map_err(internal)?
        .execute(params![key, limit])
        .map_err(internal)?;
    Ok(())
}

pub(super) fn group_set_paused(tx: &Transaction<'_>, key: String, paused: bool) -> StoreResult<()> {
    tx.prepare_cached(include_str!("sql/group_set_paused.sql"))
        .map_err(internal)?
        .execute(params![key, paused])
        .map_err(internal)?;
    Ok(())
}

pub(super) fn group_set_rate(
    tx: &Transaction<'_>,
    key: String,
    rate: Option<GroupRate>,
) -> StoreResult<()> {
    let (limit, period, burst) = GroupRate::columns(rate);
    tx.prepare_cached(include_str!("sql/group_set_rate.sql"))
        .map_err(internal)?
        .execute(params![key, limit, period, burst])
        .map_err(internal)?;
    Ok(())
}
