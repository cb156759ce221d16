//! Children of running tasks in PostgreSQL (see `store/spawn.rs`): a child submitted in
//! the transaction that locks its parent's row, a suspended attempt's end, and the state it
//! saved.

use deadpool_postgres::GenericClient;

use super::cached::Cached;
use super::{Commit, PostgresStore, gate, not_found, pg, tasks};
use crate::store::quota;
use crate::store::spawn::{self, Existing, Parent};
use crate::store::*;

/// Submits `child` (its key already its stored one) as a child of `parent`, or finds the
/// one a former call with its key submitted.
pub(super) async fn submit(
    store: &PostgresStore,
    parent: TaskId,
    child: Admitted,
    now: Micros,
) -> StoreResult<TaskId> {
    let now = store.db_time(now);
    // Bookkeeping, as its parent's attempt is (see `store/spawn.rs`).
    transaction!(store, Commit::Bookkeeping, |tx| {
        let spec = child.tasks()[0].clone();
        let row = tx
            .row_opt(include_str!("sql/spawn_parent.sql"), &[&parent])
            .await?
            .ok_or_else(|| not_found("task", parent))?;
        let read = Parent {
            batch: row.get(0),
            priority: row.get(1),
            depth: row.get::<_, i32>(2) as u32,
            running: row.get(3),
            children: row.get::<_, i64>(4) as u32,
            max_children: quota::from_column(row.get(5)),
            max_depth: quota::from_column(row.get(6)),
        };
        let key = spec.key.clone().unwrap_or_default();
        let existing = tx
            .row_opt(include_str!("sql/spawn_existing.sql"), &[&read.batch, &key])
            .await?
            .map(|r| Existing {
                id: r.get(0),
                parent: r.get(1),
            });
        if let Some(id) = spawn::check(parent, &read, &key, spec.priority, existing)? {
            return Ok(id);
        }
        let named = spawn::named_tasks(&spec);
        if !named.is_empty()
            && let Some(r) = tx
                .row_opt(include_str!("sql/spawn_strangers.sql"), &[&named, &parent])
                .await?
        {
            return Err(spawn::not_a_sibling(parent, r.get(0)));
        }
        let id = tasks::submit_in(store, tx, read.batch, &child, now).await?[0];
        let depth = (read.depth + 1) as i32;
        tx.run(include_str!("sql/spawn_link.sql"), &[&id, &parent, &depth])
            .await?;
        Ok(id)
    })
}

/// Puts a task whose attempt suspended back to wait for its children, with its `state`:
/// its open children's rows locked first, then its batch's gate.
pub(super) async fn suspend(
    tx: &impl GenericClient,
    task: TaskId,
    batch: BatchId,
    state: &[u8],
) -> StoreResult<()> {
    tx.rows(include_str!("sql/spawn_lock_children.sql"), &[&task])
        .await?;
    gate::lock(tx, batch).await?;
    let stmt = tx
        .prepare_cached(include_str!("sql/complete_suspended.sql"))
        .await
        .map_err(pg)?;
    tx.execute(&stmt, &[&state, &task]).await.map_err(pg)?;
    Ok(())
}

/// The state `task`'s last suspended attempt saved.
pub(super) async fn saved(store: &PostgresStore, task: TaskId) -> StoreResult<Option<Vec<u8>>> {
    let client = store.client(Commit::Durable).await?;
    client
        .row_opt("SELECT saved_state FROM tasks WHERE id = $1", &[&task])
        .await?
        .map(|r| r.get(0))
        .ok_or_else(|| not_found("task", task))
}
