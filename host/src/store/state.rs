//! The one vocabulary of task states: the word each view shows for a task (its row, the
//! counts, the `state` filter, `qhost status`, `/metrics`, the dashboard, the OpenAPI
//! enums), what each word means, the rule that turns a stored task into its word, the
//! codes stores keep and report, and tasks counted per state.
//!
//! The stores keep fewer states than they show (a delayed or held task is stored ready, a
//! reserved one claimed): reads compute the word from the stored state, the due time and
//! the limits of the task's batch and group ([`TaskState::shown`]), so that no claim,
//! submission or completion does more work for it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::Micros;

/// A task's state, the one word every view shows for it:
///
/// | state | meaning |
/// |---|---|
/// | `waiting` | not due yet: behind its batch's gate (a lower order is still open), delayed (`run_at`, `delay`) or waiting out a retry's backoff |
/// | `ready` | due: a node claims it as soon as it has a free slot and the task's group and batch have room (`waiting_on` names a group or batch at its limit) |
/// | `held` | due, but its batch or its group is paused (or has a limit of 0): claimed once resumed or raised |
/// | `reserved` | claimed by a node under a lease, not yet started on one of its slots |
/// | `running` | started on a node's slot |
/// | `succeeded` | ended: an attempt succeeded |
/// | `failed` | ended: its last attempt failed, or it was lost with no attempts left |
/// | `cancelled` | ended: cancelled by its batch's holder or an admin, or by a halting batch |
///
/// A task's `waiting_on` says what holds a `waiting`, `held` or `ready` task back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskState {
    Waiting,
    Ready,
    Held,
    Reserved,
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

/// The state code stores report for a claimed task that has no start mark. The stores
/// keep every claimed task as code 2 (with or without a start mark); reads map an unmarked
/// one to this code, which is never stored.
pub(crate) const RESERVED_CODE: i64 = 6;

/// The state code stores report for a ready task whose batch or group holds it (a limit
/// of 0, which a pause sets): reads map it to this code, which is never stored.
pub(crate) const HELD_CODE: i64 = 7;

impl TaskState {
    /// Every state, in the order a task goes through them.
    pub const ALL: [TaskState; 8] = [
        TaskState::Waiting,
        TaskState::Ready,
        TaskState::Held,
        TaskState::Reserved,
        TaskState::Running,
        TaskState::Succeeded,
        TaskState::Failed,
        TaskState::Cancelled,
    ];

    /// The state a stored task is shown in at `now`: its stored code (0 behind its gate,
    /// 1 ready, 2 claimed, 3 to 5 ended), whether a claimed one was started on a slot,
    /// whether its batch or group has a limit of 0 (`held`), and when it is due. The
    /// stores' reads state the same rule in SQL (`task_get.sql`, `task_list.sql`, the
    /// counts, `batch_counts.sql` / `batch_info.sql`, `stats_open.sql`).
    pub fn shown(
        stored: i64,
        started: bool,
        held: bool,
        not_before: Micros,
        now: Micros,
    ) -> Option<Self> {
        Some(match stored {
            0 => TaskState::Waiting,
            1 if held => TaskState::Held,
            1 if not_before > now => TaskState::Waiting,
            1 => TaskState::Ready,
            2 if started => TaskState::Running,
            2 => TaskState::Reserved,
            3 => TaskState::Succeeded,
            4 => TaskState::Failed,
            5 => TaskState::Cancelled,
            _ => return None,
        })
    }

    /// The code stores report it as: its stored code (0 waiting, 1 ready, 2 running,
    /// 3 succeeded, 4 failed, 5 cancelled), [`RESERVED_CODE`] or [`HELD_CODE`].
    pub fn code(self) -> i64 {
        match self {
            TaskState::Waiting => 0,
            TaskState::Ready => 1,
            TaskState::Running => 2,
            TaskState::Succeeded => 3,
            TaskState::Failed => 4,
            TaskState::Cancelled => 5,
            TaskState::Reserved => RESERVED_CODE,
            TaskState::Held => HELD_CODE,
        }
    }

    /// The state of a code as the stores report it.
    pub fn from_code(code: i64) -> Option<Self> {
        TaskState::ALL.into_iter().find(|s| s.code() == code)
    }

    /// The stored codes a task shown in this state may have: a waiting task is stored
    /// waiting (at its gate) or ready (delayed, or in a retry's backoff).
    pub fn stored(self) -> &'static [i64] {
        match self {
            TaskState::Waiting => &[0, 1],
            TaskState::Ready | TaskState::Held => &[1],
            TaskState::Reserved | TaskState::Running => &[2],
            TaskState::Succeeded => &[3],
            TaskState::Failed => &[4],
            TaskState::Cancelled => &[5],
        }
    }

    pub fn is_ended(self) -> bool {
        matches!(
            self,
            TaskState::Succeeded | TaskState::Failed | TaskState::Cancelled
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Waiting => "waiting",
            TaskState::Ready => "ready",
            TaskState::Held => "held",
            TaskState::Reserved => "reserved",
            TaskState::Running => "running",
            TaskState::Succeeded => "succeeded",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }

    /// Every state's word, for messages and help.
    pub fn names() -> Vec<&'static str> {
        TaskState::ALL.iter().map(|s| s.as_str()).collect()
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        TaskState::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| {
                format!(
                    "`{text}` is not a task state: {}",
                    TaskState::names().join(", ")
                )
            })
    }
}

/// How many tasks are in each state (of a batch, of a list's filter, of the whole store).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Progress {
    pub waiting: u64,
    pub ready: u64,
    #[serde(default)]
    #[schema(required = true)]
    pub held: u64,
    pub reserved: u64,
    pub running: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub cancelled: u64,
}

impl Progress {
    pub fn total(&self) -> u64 {
        TaskState::ALL.iter().map(|&s| self.of(s)).sum()
    }

    pub fn ended(&self) -> u64 {
        self.succeeded + self.failed + self.cancelled
    }

    pub fn is_done(&self) -> bool {
        self.ended() == self.total()
    }

    pub fn of(&self, state: TaskState) -> u64 {
        let mut counts = *self;
        *counts.slot(state)
    }

    pub fn add(&mut self, state: TaskState, count: u64) {
        *self.slot(state) += count;
    }

    fn slot(&mut self, state: TaskState) -> &mut u64 {
        match state {
            TaskState::Waiting => &mut self.waiting,
            TaskState::Ready => &mut self.ready,
            TaskState::Held => &mut self.held,
            TaskState::Reserved => &mut self.reserved,
            TaskState::Running => &mut self.running,
            TaskState::Succeeded => &mut self.succeeded,
            TaskState::Failed => &mut self.failed,
            TaskState::Cancelled => &mut self.cancelled,
        }
    }
}

/// The counts as a line: `1 waiting, 0 ready, 0 held, ...`, every state in order.
impl std::fmt::Display for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, state) in TaskState::ALL.into_iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{} {}", self.of(state), state.as_str())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_has_one_code_and_one_word() {
        for state in TaskState::ALL {
            assert_eq!(TaskState::from_code(state.code()), Some(state));
            assert_eq!(TaskState::parse(state.as_str()), Ok(state));
            let json = serde_json::to_string(&state).unwrap();
            assert_eq!(json, format!("\"{}\"", state.as_str()));
        }
        let err = TaskState::parse("delayed").unwrap_err();
        assert!(err.contains("waiting, ready, held, reserved"), "{err}");
    }

    #[test]
    fn a_stored_task_is_shown_by_what_holds_it() {
        let shown =
            |stored, held, not_before| TaskState::shown(stored, false, held, not_before, 10);
        assert_eq!(shown(0, false, 0), Some(TaskState::Waiting), "gated");
        assert_eq!(shown(1, false, 11), Some(TaskState::Waiting), "delayed");
        assert_eq!(shown(1, false, 10), Some(TaskState::Ready), "due");
        assert_eq!(
            shown(1, true, 11),
            Some(TaskState::Held),
            "paused and delayed"
        );
        assert_eq!(shown(0, true, 0), Some(TaskState::Waiting), "paused, gated");
        assert_eq!(shown(2, false, 0), Some(TaskState::Reserved));
        assert_eq!(
            TaskState::shown(2, true, false, 0, 10),
            Some(TaskState::Running)
        );
        let mut counts = Progress::default();
        counts.add(TaskState::Waiting, 1);
        counts.add(TaskState::Failed, 2);
        assert_eq!(
            counts.to_string(),
            "1 waiting, 0 ready, 0 held, 0 reserved, 0 running, 0 succeeded, 2 failed, \
             0 cancelled"
        );
    }

    #[test]
    fn the_dashboard_names_the_same_states() {
        let view = include_str!("../../assets/dashboard/view.js");
        let list = view
            .split("export const TASK_STATES = [")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .expect("view.js lists TASK_STATES");
        let names: Vec<&str> = list
            .split(',')
            .map(|n| n.trim().trim_matches('"'))
            .collect();
        assert_eq!(names, TaskState::names());
    }
}
