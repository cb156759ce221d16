//! Lists of batches and tasks: their filters, their order (newest first, by creation or
//! submission time, then id), the position a page ends at, and the facts a task's
//! `waiting_on` is read from.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{BatchId, BatchInfo, Micros, Progress, TaskId, TaskInfo, TaskState};
use crate::runtime::{Digest, Outcome};

/// The most rows of a page.
pub const MAX_LIST: usize = 500;
/// Rows of a page when none is asked.
pub const DEFAULT_LIST: usize = 50;
/// How far a task list counts its filter's tasks, per stored state: beyond, the counts
/// say they are capped rather than read every row.
pub const COUNT_CAP: u64 = 10_000;

/// Where a page ended: the time (a batch's creation, a task's submission) and id of its
/// last row. The next page starts strictly after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub at: Micros,
    pub id: i64,
}

impl Position {
    /// As an API's `next_cursor`: opaque to callers.
    pub fn to_cursor(self) -> String {
        format!("{}.{}", self.at, self.id)
    }

    pub fn from_cursor(text: &str) -> Result<Self, String> {
        let bad =
            || format!("`{text}` is not a cursor this server gave (pass `next_cursor` as it is)");
        let (at, id) = text.split_once('.').ok_or_else(bad)?;
        Ok(Position {
            at: at.parse().map_err(|_| bad())?,
            id: id.parse().map_err(|_| bad())?,
        })
    }
}

/// Where a batch is in its life, for lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum BatchState {
    /// Not sealed: tasks may still be submitted; some have not ended, or it has none.
    Open,
    /// Sealed, and some of its tasks have not ended.
    Sealed,
    /// Every one of its tasks has ended, and it has some or is sealed.
    Ended,
}

impl BatchState {
    /// The state of a batch, from its seal and progress. The stores' list filters state
    /// the same rule in SQL (`batch_list.sql`).
    pub fn of(batch: &BatchInfo) -> Self {
        let p = &batch.progress;
        if p.is_done() && (batch.sealed || p.total() > 0) {
            BatchState::Ended
        } else if batch.sealed {
            BatchState::Sealed
        } else {
            BatchState::Open
        }
    }

    /// The code the stores' filters compare: 0 open, 1 sealed, 2 ended.
    pub fn code(self) -> i64 {
        self as i64
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "open" => Ok(BatchState::Open),
            "sealed" => Ok(BatchState::Sealed),
            "ended" => Ok(BatchState::Ended),
            _ => Err(format!(
                "`{text}` is not a batch state: open, sealed or ended"
            )),
        }
    }
}

/// Which batches a list shows; every filter given applies.
#[derive(Debug, Clone, Default)]
pub struct BatchFilter {
    pub batch: Option<BatchId>,
    /// The exact name.
    pub name: Option<String>,
    /// The batches of this tenant alone.
    pub tenant: Option<super::TenantId>,
    /// Any of these; empty: any.
    pub states: Vec<BatchState>,
    /// Created at or after.
    pub created_after: Option<Micros>,
    /// Created before.
    pub created_before: Option<Micros>,
    /// Rows strictly after this position.
    pub after: Option<Position>,
    pub limit: usize,
}

/// Which tasks a list shows; every filter given applies.
#[derive(Debug, Clone, Default)]
pub struct TaskFilter {
    pub batch: Option<BatchId>,
    /// Any of these; empty: any.
    pub states: Vec<TaskState>,
    pub group: Option<String>,
    /// Tasks of any of these modules; empty: any.
    pub modules: Vec<Digest>,
    /// As [`super::TaskSelect::outcomes`]; empty: any, none included.
    pub outcomes: Vec<Outcome>,
    pub submitted_after: Option<Micros>,
    pub submitted_before: Option<Micros>,
    pub after: Option<Position>,
    pub limit: usize,
    /// The time "ready now" is judged at (a delayed task is waiting until then).
    pub now: Micros,
}

impl TaskFilter {
    /// The stored state codes the filter's states have, each once, in code order.
    pub fn stored_states(&self) -> Vec<i64> {
        let states: &[TaskState] = if self.states.is_empty() {
            &TaskState::ALL
        } else {
            &self.states
        };
        let mut codes: Vec<i64> = states.iter().flat_map(|s| s.stored()).copied().collect();
        codes.sort();
        codes.dedup();
        codes
    }

    /// The codes the filter's states are reported as, as a JSON array (SQLite's
    /// `json_each`).
    pub fn codes_json(&self) -> String {
        let states: &[TaskState] = if self.states.is_empty() {
            &TaskState::ALL
        } else {
            &self.states
        };
        serde_json::to_string(&states.iter().map(|s| s.code()).collect::<Vec<_>>())
            .expect("codes serialize")
    }
}

/// A page of tasks, with the filter's tasks counted by state.
#[derive(Debug, Clone, Default)]
pub struct TaskPage {
    /// Newest first; one more than the limit when more follow.
    pub tasks: Vec<TaskInfo>,
    pub counts: Progress,
    /// Some stored state's count stopped at [`COUNT_CAP`]: there may be more.
    pub counts_capped: bool,
}

/// What a store knows of why a pending task is not claimed: what
/// [`crate::scheduler::rules::waiting_on`] reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HoldFacts {
    pub task: TaskId,
    /// The stored state code (0 waiting at the gate, 1 ready, ...).
    pub state: i64,
    /// When it becomes due, if delayed (0: due at once).
    pub not_before: Micros,
    pub attempts: u32,
    /// The lowest order of its batch below its own with tasks not ended, and how many.
    pub gate: Option<(i64, u64)>,
    pub batch_paused: bool,
    /// Its batch's limit now (0 while paused) and how many of its tasks are claimed.
    pub batch_max_parallel: Option<u32>,
    pub batch_running: u64,
    pub group: Option<GroupFacts>,
    /// Its batch's tenant; none: the admin's.
    pub tenant: Option<TenantFacts>,
    /// How many tasks it runs after have not ended, and the first of them (at most
    /// [`OPEN_DEPS_SHOWN`]).
    pub deps_open: u64,
    pub deps: Vec<OpenDep>,
}

/// How many of a task's open dependencies `waiting_on` names.
pub const OPEN_DEPS_SHOWN: usize = 10;

/// A task another waits for: its id and key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OpenDep {
    pub id: TaskId,
    #[schema(required = true)]
    pub key: Option<String>,
}

impl HoldFacts {
    /// The state the task is shown in at `now` ([`TaskState::shown`]); none when it is not
    /// pending.
    pub fn shown(&self, now: Micros) -> Option<TaskState> {
        let held =
            self.batch_max_parallel == Some(0) || self.group.as_ref().is_some_and(|g| g.limit == 0);
        TaskState::shown(self.state, false, held, self.not_before, now)
            .filter(|_| matches!(self.state, 0 | 1))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupFacts {
    pub key: String,
    pub paused: bool,
    /// Its limit now (0 while paused).
    pub limit: u32,
    pub running: u64,
    /// Its rate's bucket; none: it has no rate.
    pub rate: Option<super::Bucket>,
    /// When its hold after a deferral ends (0: never held; see `store/hold.rs`).
    pub held_until: super::Micros,
}

/// A tenant as what its task may wait on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantFacts {
    pub name: String,
    /// Its running limit (none: no limit) and its tasks claimed now.
    pub max_running: Option<u32>,
    pub running: u64,
    /// When the hold of its spent CPU budget ends (0: never held; see `store/budget.rs`).
    pub held_until: super::Micros,
}

/// The page's next cursor: the position of its last row when a row follows it.
pub fn next_position<T>(
    rows: &mut Vec<T>,
    limit: usize,
    position: impl Fn(&T) -> Position,
) -> Option<Position> {
    if rows.len() > limit {
        rows.truncate(limit);
        rows.last().map(position)
    } else {
        None
    }
}
