//! Which tasks a bulk action reaches (cancel, re-drive, priority), and what a bulk
//! cancellation changed. Each action takes, among the selected tasks, those it applies to:
//! a cancellation the tasks that have not ended, a re-drive the failed and cancelled ones,
//! a priority the ones that have not started.

use serde::{Deserialize, Serialize};

use super::{BatchId, Micros, TaskId, TaskState};
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
    /// Tasks shown in one of these states at the time of the action; empty: any.
    pub states: Vec<TaskState>,
    /// Tasks of one of these modules (digests in hex); empty: any.
    pub modules: Vec<String>,
    /// Tasks among these ids (a selection of rows); empty: any.
    pub tasks: Vec<TaskId>,
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

    /// The stored codes among `action`'s (those the action applies to) that a task shown
    /// in one of the selected states may have.
    pub(crate) fn codes(&self, action: &[i64]) -> Vec<i64> {
        action
            .iter()
            .copied()
            .filter(|code| {
                self.states.is_empty() || self.states.iter().any(|s| s.stored().contains(code))
            })
            .collect()
    }

    /// Whether a selected task, read with its stored code, start mark, hold and due time,
    /// is shown at `now` in one of the selected states ([`TaskState::shown`]).
    pub(crate) fn shows(
        &self,
        stored: i64,
        started: bool,
        held: bool,
        not_before: Micros,
        now: Micros,
    ) -> bool {
        self.states.is_empty()
            || TaskState::shown(stored, started, held, not_before, now)
                .is_some_and(|s| self.states.contains(&s))
    }

    /// The modules as the stores compare them, `None` for any (as [`Self::outcome_names`]).
    pub(crate) fn module_names(&self) -> Option<Vec<String>> {
        (!self.modules.is_empty()).then(|| self.modules.clone())
    }

    /// The ids of the selection, `None` for any.
    pub(crate) fn task_ids(&self) -> Option<Vec<TaskId>> {
        (!self.tasks.is_empty()).then(|| self.tasks.clone())
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
