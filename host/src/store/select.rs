//! Which tasks a bulk action reaches (cancel, re-drive, priority), and what a bulk
//! cancellation changed. Each action takes, among the selected tasks, those it applies to:
//! a cancellation the tasks that have not ended, a re-drive the failed and cancelled ones,
//! a priority the ones that have not started.

use serde::{Deserialize, Serialize};

use super::{BatchId, TaskId};
use crate::runtime::Outcome;

/// The tasks a bulk action reaches: those that match every filter given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSelect {
    pub task: Option<TaskId>,
    pub batch: Option<BatchId>,
    pub group: Option<String>,
    /// Tasks whose outcome is one of these: for an ended task, how it ended; for one that
    /// will run again, how its last attempt ended. Empty: any, none included.
    pub outcomes: Vec<Outcome>,
}

impl TaskSelect {
    /// One task.
    pub fn task(task: TaskId) -> Self {
        TaskSelect {
            task: Some(task),
            ..TaskSelect::default()
        }
    }

    /// Every task of one batch.
    pub fn batch(batch: BatchId) -> Self {
        TaskSelect {
            batch: Some(batch),
            ..TaskSelect::default()
        }
    }

    /// The outcomes as the stores compare them, `None` for any: a JSON array of names
    /// (SQLite's `json_each`), or the names (PostgreSQL's `= ANY`).
    pub(crate) fn outcome_names(&self) -> Option<Vec<&'static str>> {
        (!self.outcomes.is_empty()).then(|| self.outcomes.iter().map(|o| o.as_str()).collect())
    }
}

/// What a bulk cancellation changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkCancel {
    /// Tasks that had not started, now cancelled.
    pub cancelled: u64,
    /// Tasks claimed by a node (reserved or running), asked to stop.
    pub stopping: u64,
}
