//! Children of running tasks in SQLite (see `store/spawn.rs`): a child submitted in the
//! transaction that reads its parent, a suspended attempt's end, and the state it saved.

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::{internal, not_found, tasks};
use crate::store::quota;
use crate::store::spawn::{self, Existing, Parent};
use crate::store::*;

/// Submits `child` (its key already its stored one) as a child of `parent`, or finds the
/// one a former call with its key submitted.
pub(super) fn submit(
    tx: &Transaction<'_>,
    parent: TaskId,
    child: TaskSpec,
    trace: Option<&str>,
    now: Micros,
) -> StoreResult<TaskId> {
    let read = tx
        .prepare_cached(include_str!("sql/spawn_parent.sql"))
        .map_err(internal)?
        .query_row([parent], |r| {
            Ok(Parent {
                batch: r.get(0)?,
                priority: r.get(1)?,
                depth: r.get(2)?,
                running: r.get(3)?,
                children: r.get(4)?,
                max_children: quota::from_column(r.get(5)?),
                max_depth: quota::from_column(r.get(6)?),
            })
        })
        .optional()
        .map_err(internal)?
        .ok_or_else(|| not_found("task", parent))?;
    let key = child.key.clone().unwrap_or_default();
    let existing = tx
        .prepare_cached(include_str!("sql/spawn_existing.sql"))
        .map_err(internal)?
        .query_row(params![read.batch, key], |r| {
            Ok(Existing {
                id: r.get(0)?,
                parent: r.get(1)?,
            })
        })
        .optional()
        .map_err(internal)?;
    if let Some(id) = spawn::check(parent, &read, &key, child.priority, existing)? {
        return Ok(id);
    }
    let ids = spawn::named_tasks(&child);
    if let Some(stranger) = first_stranger(tx, parent, &ids)? {
        return Err(spawn::not_a_sibling(parent, stranger));
    }
    let id = tasks::submit(tx, read.batch, vec![child], trace, now)?[0];
    tx.prepare_cached(include_str!("sql/spawn_link.sql"))
        .map_err(internal)?
        .execute(params![id, parent, read.depth + 1])
        .map_err(internal)?;
    tx.prepare_cached(include_str!("sql/spawn_edge.sql"))
        .map_err(internal)?
        .execute(params![id, parent])
        .map_err(internal)?;
    Ok(id)
}

/// The first of `named` that is not a child of `parent`, if one is not.
fn first_stranger(
    tx: &Transaction<'_>,
    parent: TaskId,
    named: &[TaskId],
) -> StoreResult<Option<TaskId>> {
    let mut stmt = tx
        .prepare_cached("SELECT parent_id FROM tasks WHERE id = ?")
        .map_err(internal)?;
    for &id in named {
        let of: Option<Option<TaskId>> = stmt
            .query_row([id], |r| r.get(0))
            .optional()
            .map_err(internal)?;
        if of.flatten() != Some(parent) {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// Puts a task whose attempt suspended back to wait for its children, with its `state`.
pub(super) fn suspend(tx: &Transaction<'_>, task: TaskId, state: Vec<u8>) -> StoreResult<()> {
    tx.prepare_cached(include_str!("sql/complete_suspended.sql"))
        .map_err(internal)?
        .execute(params![state, task])
        .map_err(internal)?;
    Ok(())
}

/// The state `task`'s last suspended attempt saved.
pub(super) fn saved(conn: &Connection, task: TaskId) -> StoreResult<Option<Vec<u8>>> {
    conn.prepare_cached("SELECT saved_state FROM tasks WHERE id = ?")
        .map_err(internal)?
        .query_row([task], |r| r.get(0))
        .optional()
        .map_err(internal)?
        .ok_or_else(|| not_found("task", task))
}
