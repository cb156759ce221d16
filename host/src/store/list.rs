//! Lists of batches and tasks: their filters, their order (newest first, by creation or
//! submission time, then id), the position a page ends at, and the facts a task's
//! `waiting_on` is read from.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{BatchId, BatchInfo, Micros, TaskId, TaskInfo};
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

/// A task's state as lists filter it: `waiting` is every pending task that no node may
/// claim now (behind its gate, held by a pause, delayed, waiting out a retry's backoff,
/// or its group or batch at its limit), `ready` one that a node may claim now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ListState {
    Waiting,
    Ready,
    Reserved,
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl ListState {
    pub const ALL: [ListState; 7] = [
        ListState::Waiting,
        ListState::Ready,
        ListState::Reserved,
        ListState::Running,
        ListState::Succeeded,
        ListState::Failed,
        ListState::Cancelled,
    ];

    /// The code the stores' list statements compute for a task: 0 waiting, 1 ready,
    /// 2 running, 3 succeeded, 4 failed, 5 cancelled, 6 reserved (as `TaskState` codes).
    pub fn code(self) -> i64 {
        match self {
            ListState::Waiting => 0,
            ListState::Ready => 1,
            ListState::Running => 2,
            ListState::Succeeded => 3,
            ListState::Failed => 4,
            ListState::Cancelled => 5,
            ListState::Reserved => 6,
        }
    }

    pub fn from_code(code: i64) -> Option<Self> {
        ListState::ALL.into_iter().find(|s| s.code() == code)
    }

    /// The stored state codes a task in this state may have: a waiting task may be
    /// stored waiting (at its gate) or ready (held, delayed, or its group or batch full).
    pub fn stored(self) -> &'static [i64] {
        match self {
            ListState::Waiting => &[0, 1],
            ListState::Ready => &[1],
            ListState::Reserved | ListState::Running => &[2],
            ListState::Succeeded => &[3],
            ListState::Failed => &[4],
            ListState::Cancelled => &[5],
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ListState::Waiting => "waiting",
            ListState::Ready => "ready",
            ListState::Reserved => "reserved",
            ListState::Running => "running",
            ListState::Succeeded => "succeeded",
            ListState::Failed => "failed",
            ListState::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        ListState::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| {
                format!(
                    "`{text}` is not a task state: waiting, ready, reserved, running, \
                     succeeded, failed or cancelled"
                )
            })
    }
}

/// Which tasks a list shows; every filter given applies.
#[derive(Debug, Clone, Default)]
pub struct TaskFilter {
    pub batch: Option<BatchId>,
    /// Any of these; empty: any.
    pub states: Vec<ListState>,
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
        let states: &[ListState] = if self.states.is_empty() {
            &ListState::ALL
        } else {
            &self.states
        };
        let mut codes: Vec<i64> = states.iter().flat_map(|s| s.stored()).copied().collect();
        codes.sort();
        codes.dedup();
        codes
    }

    /// The list codes the filter's states have, as a JSON array (SQLite's `json_each`).
    pub fn codes_json(&self) -> String {
        let states: &[ListState] = if self.states.is_empty() {
            &ListState::ALL
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
    pub counts: ListCounts,
    /// Some stored state's count stopped at [`COUNT_CAP`]: there may be more.
    pub counts_capped: bool,
}

/// How many tasks a filter names in each state, each count stopping at [`COUNT_CAP`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ListCounts {
    pub waiting: u64,
    pub ready: u64,
    pub reserved: u64,
    pub running: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub cancelled: u64,
}

impl ListCounts {
    pub fn add(&mut self, state: ListState, count: u64) {
        *self.slot(state) += count;
    }

    pub fn of(&self, state: ListState) -> u64 {
        let mut counts = *self;
        *counts.slot(state)
    }

    fn slot(&mut self, state: ListState) -> &mut u64 {
        match state {
            ListState::Waiting => &mut self.waiting,
            ListState::Ready => &mut self.ready,
            ListState::Reserved => &mut self.reserved,
            ListState::Running => &mut self.running,
            ListState::Succeeded => &mut self.succeeded,
            ListState::Failed => &mut self.failed,
            ListState::Cancelled => &mut self.cancelled,
        }
    }
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
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupFacts {
    pub key: String,
    pub paused: bool,
    /// Its limit now (0 while paused).
    pub limit: u32,
    pub running: u64,
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
