//! Requests done once: a batch opened with its tasks in one transaction, and submissions
//! kept under their idempotency keys (see [`crate::store::keys`]). SQLite has one writer,
//! so a key looked up and then kept within one transaction cannot be taken in between.

use rusqlite::{OptionalExtension, Transaction, params};

use super::{batches, internal, tasks};
use crate::store::keys::{self, OPEN, SUBMIT};
use crate::store::*;

/// A kept request: its hash, its first answer, what was sealed beside it.
type Kept = (Vec<u8>, Vec<u8>, Option<Vec<u8>>);

fn find(
    tx: &Transaction<'_>,
    batch: BatchId,
    kind: i32,
    key: &RequestKey,
) -> StoreResult<Option<Kept>> {
    tx.prepare_cached(include_str!("sql/key_find.sql"))
        .map_err(internal)?
        .query_row(params![batch, kind, key.key_hash], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()
        .map_err(internal)
}

fn insert(
    tx: &Transaction<'_>,
    batch: BatchId,
    kind: i32,
    key: RequestKey,
    answer: Vec<u8>,
    now: Micros,
) -> StoreResult<()> {
    tx.prepare_cached(include_str!("sql/key_insert.sql"))
        .map_err(internal)?
        .execute(params![
            batch,
            kind,
            key.key_hash,
            key.body_hash,
            answer,
            key.sealed,
            now
        ])
        .map_err(internal)?;
    Ok(())
}

/// Opens a batch, with its handle's hash, and submits its tasks; or answers a repeat.
pub(super) fn create(
    tx: &Transaction<'_>,
    new: NewBatch,
    now: Micros,
) -> StoreResult<Answer<Created>> {
    if let Some(key) = &new.key
        && let Some((body_hash, answer, sealed)) = find(tx, 0, OPEN, key)?
    {
        return keys::repeat(key, &body_hash, &answer, sealed);
    }
    // The secret stands in for the hash until the id is known: both are unique.
    let id = batches::open(tx, new.spec, new.handle.secret, now)?.id;
    batches::set_handle(tx, id, (new.handle.hash)(id, &new.handle.secret))?;
    let tasks = if new.tasks.is_empty() {
        Vec::new()
    } else {
        let (specs, trace) = new.tasks.into_parts();
        tasks::submit(tx, id, specs, trace.as_deref(), now)?
    };
    let created = Created {
        batch: batches::get(tx, id)?,
        tasks,
    };
    if let Some(key) = new.key {
        insert(tx, id, OPEN, key, keys::keep(&created), now)?;
    }
    Ok(Answer::First(created))
}

/// Submits tasks once per key; a repeat gets the first answer.
pub(super) fn submit(
    tx: &Transaction<'_>,
    batch: BatchId,
    specs: Vec<TaskSpec>,
    trace: Option<&str>,
    key: RequestKey,
    now: Micros,
) -> StoreResult<Answer<Vec<TaskId>>> {
    if let Some((body_hash, answer, sealed)) = find(tx, batch, SUBMIT, &key)? {
        return keys::repeat(&key, &body_hash, &answer, sealed);
    }
    let kept: u64 = tx
        .prepare_cached("SELECT COUNT(*) FROM request_keys WHERE batch_id = ?")
        .map_err(internal)?
        .query_row([batch], |r| r.get(0))
        .map_err(internal)?;
    if kept >= MAX_KEYS_PER_BATCH {
        return Err(keys::too_many_keys(batch));
    }
    let ids = tasks::submit(tx, batch, specs, trace, now)?;
    insert(tx, batch, SUBMIT, key, keys::keep(&ids), now)?;
    Ok(Answer::First(ids))
}

/// Deletes up to `chunk` keys kept before `before` whose batch has nothing open.
pub(super) fn prune(tx: &Transaction<'_>, before: Micros, chunk: usize) -> StoreResult<usize> {
    tx.prepare_cached(include_str!("sql/prune_keys.sql"))
        .map_err(internal)?
        .execute(params![before, chunk as i64])
        .map_err(internal)
}
