//! The whole queue at a glance in PostgreSQL: tasks per state from the ended totals the
//! triggers of `migrations/0008_counters.sql` keep and from the tables of tasks not ended
//! (the ready queue, the leases); the oldest ready task, the busy groups and the deepest
//! batches. Each read is one snapshot, so that its counts agree with each other.

use deadpool_postgres::GenericClient;
use tokio_postgres::IsolationLevel;

use super::cached::Cached;
use super::{Commit, PostgresStore, pg};
use crate::store::*;

pub(super) async fn task_counts(store: &PostgresStore) -> StoreResult<Progress> {
    let mut client = store.client(Commit::Durable).await?;
    let tx = snapshot(&mut client).await?;
    Ok(counts(&tx).await?.0)
}

/// A read-only transaction that sees one snapshot throughout.
pub(super) async fn snapshot(
    client: &mut deadpool_postgres::Object,
) -> StoreResult<deadpool_postgres::Transaction<'_>> {
    client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(pg)
}

/// Per ended state (3 succeeded, 4 failed, 5 cancelled): how many times a task ended so,
/// and how many are in it now, from the counters (`sql/stats_totals.sql`).
pub(super) async fn ended_counters(
    client: &impl GenericClient,
) -> StoreResult<Vec<(i32, u64, u64)>> {
    let rows = client
        .rows(include_str!("sql/stats_totals.sql"), &[])
        .await?;
    Ok(rows
        .iter()
        .map(|row| {
            let ended = row.get::<_, i64>(1).max(0) as u64;
            let gone = row.get::<_, i64>(2).max(0) as u64;
            (row.get(0), ended, ended.saturating_sub(gone))
        })
        .collect())
}

/// Tasks per state now (as [`TaskState::shown`] says), and the ended totals.
async fn counts(tx: &impl GenericClient) -> StoreResult<(Progress, EndedTotals)> {
    let mut progress = Progress::default();
    let mut totals = EndedTotals::default();
    for (state, ended, now) in ended_counters(tx).await? {
        match state {
            3 => (progress.succeeded, totals.succeeded) = (now, ended),
            4 => (progress.failed, totals.failed) = (now, ended),
            5 => (progress.cancelled, totals.cancelled) = (now, ended),
            _ => {}
        }
    }
    let row = tx.row(include_str!("sql/stats_open.sql"), &[]).await?;
    let count = |i: usize| row.get::<_, i64>(i).max(0) as u64;
    let (open, ready, held, reserved, running) = (count(0), count(1), count(2), count(3), count(4));
    let delayed = count(5);
    progress.ready = ready.saturating_sub(held + delayed);
    progress.held = held;
    progress.reserved = reserved;
    progress.running = running;
    progress.waiting = open.saturating_sub(ready + reserved + running) + delayed;
    Ok((progress, totals))
}

pub(super) async fn queue_stats(store: &PostgresStore, now: Micros) -> StoreResult<QueueStats> {
    let mut client = store.client(Commit::Durable).await?;
    let tx = snapshot(&mut client).await?;
    let (counts, ended_total) = counts(&tx).await?;
    let oldest_ready = tx
        .row_opt(
            include_str!("sql/stats_oldest_ready.sql"),
            &[&store.db_time(now)],
        )
        .await?
        .map(|r| store.local_time(r.get(0)));
    let groups = tx
        .rows(
            include_str!("sql/stats_groups.sql"),
            &[&(MAX_LISTED as i64), &store.db_time(now)],
        )
        .await?
        .iter()
        .map(|r| {
            let columns = (
                r.get::<_, Option<i32>>(3).map(i64::from),
                r.get(4),
                r.get::<_, Option<i32>>(5).map(i64::from),
            );
            let (rate, tokens) = GroupDepth::rate_at(columns, r.get(6), store.db_time(now));
            GroupDepth {
                key: r.get(0),
                limit: r.get::<_, i32>(1).max(0) as u32,
                paused: r.get(2),
                running: r.get::<_, i64>(7).max(0) as u64,
                ready: r.get::<_, i64>(8).max(0) as u64,
                rate,
                tokens,
            }
        })
        .collect();
    Ok(QueueStats {
        counts,
        ended_total,
        oldest_ready,
        groups,
    })
}

pub(super) async fn batch_depths(
    store: &PostgresStore,
    limit: usize,
) -> StoreResult<Vec<BatchDepth>> {
    let client = store.client(Commit::Durable).await?;
    let rows = client
        .rows(
            include_str!("sql/stats_batches.sql"),
            &[&(limit.min(MAX_LISTED) as i64)],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| BatchDepth {
            batch: r.get(0),
            name: r.get(1),
            open: r.get::<_, i64>(2).max(0) as u64,
            paused: r.get(3),
        })
        .collect())
}
