//! Requests done once: a batch opened with its tasks in one transaction, and submissions
//! kept under their idempotency keys (see [`crate::store::keys`]).
//!
//! Two requests under one key may arrive at once (a client retrying while the first is
//! still under way): a submission's key is looked up under its batch's gate lock, which
//! every submission into the batch takes; an opening's under an advisory lock of the key's
//! own. The second then finds what the first kept.

use deadpool_postgres::GenericClient;

use super::cached::Cached;
use super::{Commit, PostgresStore, batches, tasks};
use crate::store::keys::{self, OPEN, SUBMIT};
use crate::store::*;

/// A kept request: its hash, its first answer, what was sealed beside it.
type Kept = (Vec<u8>, Vec<u8>, Option<Vec<u8>>);

async fn find(
    tx: &impl GenericClient,
    batch: BatchId,
    kind: i32,
    key: &RequestKey,
) -> StoreResult<Option<Kept>> {
    Ok(tx
        .row_opt(
            include_str!("sql/key_find.sql"),
            &[&batch, &kind, &&key.key_hash[..]],
        )
        .await?
        .map(|r| (r.get(0), r.get(1), r.get(2))))
}

async fn insert(
    tx: &impl GenericClient,
    batch: BatchId,
    kind: i32,
    key: &RequestKey,
    answer: Vec<u8>,
    now: Micros,
) -> StoreResult<()> {
    tx.run(
        include_str!("sql/key_insert.sql"),
        &[
            &batch,
            &kind,
            &&key.key_hash[..],
            &&key.body_hash[..],
            &answer,
            &key.sealed,
            &now,
        ],
    )
    .await?;
    Ok(())
}

/// Waits for any other opening under the same key to finish. The lock's class is the id
/// of the schema's `request_keys` table, as the gates' is that of `tasks`.
async fn lock_key(tx: &impl GenericClient, key: &RequestKey) -> StoreResult<()> {
    let lock = i32::from_le_bytes(key.key_hash[..4].try_into().expect("four bytes"));
    tx.run(
        "SELECT pg_advisory_xact_lock('request_keys'::regclass::oid::int, $1)",
        &[&lock],
    )
    .await?;
    Ok(())
}

/// Opens a batch, with its handle's hash, and submits its tasks; or answers a repeat.
pub(super) async fn create(
    store: &PostgresStore,
    new: NewBatch,
    now: Micros,
) -> StoreResult<Answer<Created>> {
    let now = store.db_time(now);
    let new = &new;
    transaction!(store, Commit::Durable, |tx| {
        if let Some(key) = &new.key {
            lock_key(tx, key).await?;
            if let Some((body_hash, answer, sealed)) = find(tx, 0, OPEN, key).await? {
                return keys::repeat(key, &body_hash, &answer, sealed);
            }
        }
        // The secret stands in for the hash until the id is known: both are unique.
        let id = batches::insert(tx, &new.spec, &new.handle.secret, now).await?;
        let hash = (new.handle.hash)(id, &new.handle.secret);
        tx.run(
            "UPDATE batches SET handle_hash = $1 WHERE id = $2",
            &[&&hash[..], &id],
        )
        .await?;
        let tasks = if new.tasks.is_empty() {
            Vec::new()
        } else {
            tasks::submit_in(store, tx, id, &new.tasks, now).await?
        };
        let created = Created {
            batch: batches::info(tx, id).await?,
            tasks,
        };
        if let Some(key) = &new.key {
            insert(tx, id, OPEN, key, keys::keep(&created), now).await?;
        }
        Ok(Answer::First(created))
    })
}

/// Submits tasks once per key; a repeat gets the first answer.
pub(super) async fn submit(
    store: &PostgresStore,
    batch: BatchId,
    tasks: Admitted,
    key: RequestKey,
    now: Micros,
) -> StoreResult<Answer<Vec<TaskId>>> {
    let now = store.db_time(now);
    transaction!(store, Commit::Durable, |tx| {
        // Every submission into the batch holds its gate: the key is looked up alone.
        super::gate::lock(tx, batch).await?;
        if let Some((body_hash, answer, sealed)) = find(tx, batch, SUBMIT, &key).await? {
            return keys::repeat(&key, &body_hash, &answer, sealed);
        }
        let kept: i64 = tx
            .row(
                "SELECT COUNT(*) FROM request_keys WHERE batch_id = $1",
                &[&batch],
            )
            .await?
            .get(0);
        if kept as u64 >= MAX_KEYS_PER_BATCH {
            return Err(keys::too_many_keys(batch));
        }
        let ids = tasks::submit_in(store, tx, batch, &tasks, now).await?;
        insert(tx, batch, SUBMIT, &key, keys::keep(&ids), now).await?;
        Ok(Answer::First(ids))
    })
}

/// Deletes up to `chunk` keys kept before `before` (database time) whose batch has
/// nothing open.
pub(super) async fn prune(
    tx: &impl GenericClient,
    before: Micros,
    chunk: i64,
) -> StoreResult<usize> {
    let deleted = tx
        .run(include_str!("sql/prune_keys.sql"), &[&before, &chunk])
        .await?;
    Ok(deleted as usize)
}
