//! Requests done exactly once: what a store keeps of a request sent with an idempotency
//! key, so that a repeat gets the first answer; and a batch opened (and filled) in one
//! transaction, so that a refused submission leaves no batch behind.
//!
//! A key is kept with its batch, for as long as the batch: a release deletes it, and so
//! does pruning once the batch has nothing open and the key is past the retention. A batch
//! keeps at most [`MAX_KEYS_PER_BATCH`] keys.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{Admitted, BatchId, BatchInfo, BatchSpec, StoreError, StoreResult, TaskId};

/// Keys one batch keeps at most: a client cannot make the store keep more than this many
/// answers per batch (each at most one submission's ids long).
pub const MAX_KEYS_PER_BATCH: u64 = 1000;

/// The kinds of requests a key is kept for, as the stores record them.
pub(crate) const OPEN: i32 = 0;
pub(crate) const SUBMIT: i32 = 1;

/// How a store hashes a new batch's handle, given the batch's id and the handle's secret:
/// a handle names its batch's id, which the store knows only once the batch is open.
pub type HandleHasher = fn(BatchId, &[u8; 32]) -> [u8; 32];

/// The handle of a batch about to be opened.
#[derive(Clone, Copy)]
pub struct NewHandle {
    pub secret: [u8; 32],
    pub hash: HandleHasher,
}

/// A request's idempotency key, as a store keeps it.
#[derive(Debug, Clone)]
pub struct RequestKey {
    /// sha256 of the client's key: the key itself is never stored.
    pub key_hash: [u8; 32],
    /// sha256 of what the request asked: a repeat under the same key must ask the same.
    pub body_hash: [u8; 32],
    /// Kept beside the answer and given back with a repeat: for an open, the handle's
    /// secret sealed under the client's key, which only the key's holder can open.
    pub sealed: Option<Vec<u8>>,
}

/// A batch to open, with the tasks to submit into it in the same transaction.
pub struct NewBatch {
    pub spec: BatchSpec,
    /// None: an empty batch.
    pub tasks: Admitted,
    pub handle: NewHandle,
    pub key: Option<RequestKey>,
}

/// A batch opened, and the ids of the tasks submitted with it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Created {
    pub batch: BatchInfo,
    pub tasks: Vec<TaskId>,
}

/// What a keyed request answers.
#[derive(Debug, Clone)]
pub enum Answer<T> {
    /// Done now.
    First(T),
    /// Done before under the same key, for the same request: its first answer, with what
    /// was sealed beside it.
    Repeat { answer: T, sealed: Option<Vec<u8>> },
}

impl<T> Answer<T> {
    pub fn value(&self) -> &T {
        match self {
            Answer::First(value) | Answer::Repeat { answer: value, .. } => value,
        }
    }
}

/// An answer as a store keeps it.
pub(crate) fn keep<T: Serialize>(answer: &T) -> Vec<u8> {
    serde_json::to_vec(answer).expect("answers serialize")
}

/// The answer a store kept for `key`, whose first request asked `body_hash`: the same
/// request repeated gets it back; another one is refused.
pub(crate) fn repeat<T: DeserializeOwned>(
    key: &RequestKey,
    body_hash: &[u8],
    answer: &[u8],
    sealed: Option<Vec<u8>>,
) -> StoreResult<Answer<T>> {
    if body_hash != key.body_hash {
        return Err(StoreError::Conflict(
            "this Idempotency-Key was sent before with another request; send a new key for a \
             new request"
                .into(),
        ));
    }
    let answer = serde_json::from_slice(answer)
        .map_err(|e| StoreError::Internal(anyhow::anyhow!("a kept answer does not read: {e}")))?;
    Ok(Answer::Repeat { answer, sealed })
}

/// A batch that keeps [`MAX_KEYS_PER_BATCH`] keys already.
pub(crate) fn too_many_keys(batch: BatchId) -> StoreError {
    StoreError::Conflict(format!(
        "batch {batch} keeps {MAX_KEYS_PER_BATCH} idempotency keys already, the most it \
         may; submit without a key, or into another batch"
    ))
}
