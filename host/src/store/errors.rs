//! What a store call can fail with, and the refusals both drivers give, worded once:
//! what the caller did, what stands in the way, and what to do instead.

use super::{BatchId, TaskId, TaskState, postgres, sqlite};
use crate::runtime::Digest;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{what} {id} does not exist")]
    NotFound { what: &'static str, id: String },
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Conflict(String),
    /// Past one of the batch's quotas ([`super::quota`]), or its tenant's open limit.
    #[error("{0}")]
    Quota(String),
    #[error("the batch handle does not match batch {0}")]
    Forbidden(BatchId),
    #[error("store failure: {0:#}")]
    Internal(#[from] anyhow::Error),
}

impl StoreError {
    /// Whether the database refused what was to be written: a value too large for it, or
    /// not valid for its column. Writing the same again fails again, whereas a database
    /// that is down, busy or restarting takes it once it is back.
    pub fn is_refusal(&self) -> bool {
        let StoreError::Internal(err) = self else {
            return false;
        };
        err.chain()
            .any(|cause| sqlite::is_refusal(cause) || postgres::is_refusal(cause))
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

pub(crate) fn schedule_exists(name: &str) -> StoreError {
    StoreError::Conflict(format!(
        "a schedule named `{name}` exists: choose another name, or remove that one first"
    ))
}

pub(crate) fn batch_sealed(batch: BatchId) -> StoreError {
    StoreError::Conflict(format!("batch {batch} is sealed: it takes no more tasks"))
}

pub(crate) fn batch_not_ended(batch: BatchId, unended: u64) -> StoreError {
    StoreError::Conflict(format!(
        "batch {batch} still has {unended} task(s) that have not ended; cancel it first"
    ))
}

pub(crate) fn module_in_use(module: &str, in_use: i64) -> StoreError {
    StoreError::Conflict(format!(
        "module {module} is used by {in_use} task(s) that have not ended"
    ))
}

/// `index`: the task's place in its submission.
pub(crate) fn unknown_module(index: usize, module: &Digest) -> StoreError {
    StoreError::Invalid(format!(
        "task {index}: module {module} does not exist; add it first"
    ))
}

pub(crate) fn order_below_started(
    index: usize,
    order: i64,
    started: i64,
    batch: BatchId,
) -> StoreError {
    StoreError::Invalid(format!(
        "task {index}: order {order} is lower than order {started}, which has already \
         started in batch {batch}; use order {started} or higher"
    ))
}

/// A re-drive of a task whose module was deleted after the task ended.
pub(crate) fn module_gone(task: TaskId, module: &str) -> StoreError {
    StoreError::Invalid(format!(
        "task {task}: its module {module} no longer exists; add it again to run the task again"
    ))
}

pub(crate) fn priority_of_started(task: TaskId, state: TaskState) -> StoreError {
    StoreError::Conflict(format!(
        "task {task} is {}: only the priority of a task that has not started can change",
        state.as_str()
    ))
}

/// A database that a newer qhost migrated: this one would misread it.
pub(crate) fn newer_schema(version: usize, known: usize) -> anyhow::Error {
    anyhow::anyhow!(
        "the database is at schema version {version}, newer than this qhost knows ({known})"
    )
}
