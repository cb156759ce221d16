//! The node registry: heartbeats (each also measures this node's clock offset again),
//! the list of nodes, and removal.

use std::sync::atomic::Ordering;

use super::cached::Cached;
use super::schema::measure_clock_offset;
use super::{Commit, PostgresStore};
use crate::store::*;

pub(super) async fn beat(store: &PostgresStore, beat: NodeBeat) -> StoreResult<()> {
    {
        let client = store.client(Commit::Bookkeeping).await?;
        let offset = measure_clock_offset(&client)
            .await
            .map_err(StoreError::Internal)?;
        store.clock_offset.store(offset, Ordering::Relaxed);
    }
    let now = store.db_time(beat.now);
    let started_at = store.db_time(beat.started_at);
    let offset = store.clock_offset.load(Ordering::Relaxed);
    let workers = beat.workers as i32;
    transaction!(store, Commit::Bookkeeping, |tx| {
        tx.run(
            include_str!("sql/node_beat.sql"),
            &[&beat.node, &workers, &started_at, &now, &offset],
        )
        .await?;
        Ok(())
    })
}

pub(super) async fn list(store: &PostgresStore) -> StoreResult<Vec<NodeInfo>> {
    let client = store.client(Commit::Durable).await?;
    let rows = client
        .rows(
            "SELECT name, workers, started_at, heartbeat_at, clock_offset FROM nodes ORDER BY name",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| NodeInfo {
            node: r.get(0),
            workers: r.get::<_, i32>(1) as usize,
            started_at: r.get(2),
            heartbeat_at: r.get(3),
            clock_offset: r.get(4),
            busy: 0,
        })
        .collect())
}

pub(super) async fn remove(store: &PostgresStore, node: String) -> StoreResult<()> {
    transaction!(store, Commit::Bookkeeping, |tx| {
        tx.run("DELETE FROM nodes WHERE name = $1", &[&node])
            .await?;
        Ok(())
    })
}
