//! The store's vocabulary for schedules: what is kept of a schedule, of each tick it
//! handled, and what handling a tick writes, all or nothing.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{BatchId, BatchSpec, Micros};

/// A schedule as it is created. The store keeps the settings as given; the scheduler reads
/// them (`crate::schedules`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScheduleSpec {
    pub name: String,
    pub cron: String,
    pub timezone: String,
    /// The plan each tick opens a batch from: `{"batch": {...}, "tasks": [...]}`.
    pub plan: serde_json::Value,
    pub overlap: String,
    pub catch_up: String,
}

/// A schedule as it is kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ScheduleInfo {
    pub id: i64,
    pub name: String,
    pub cron: String,
    pub timezone: String,
    #[schema(value_type = crate::scheduler::SchedulePlan)]
    pub plan: serde_json::Value,
    #[schema(value_type = crate::schedules::timing::Overlap)]
    pub overlap: String,
    /// `none`, `last` or `all:N`.
    #[schema(pattern = "^(none|last|all:(100|[1-9][0-9]?))$")]
    pub catch_up: String,
    pub paused: bool,
    /// The first tick not yet handled; none once the expression matches no more.
    #[schema(required = true)]
    pub next_due: Option<Micros>,
    /// The batch the last fired tick opened.
    #[schema(required = true)]
    pub last_batch: Option<BatchId>,
    /// Ticks missed while no node ran and not fired (`catch_up`).
    pub missed: u64,
    pub created_at: Micros,
}

/// What became of a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TickResult {
    /// It opened its batch.
    Fired,
    /// It was passed over: the last tick's batch was still open (`overlap: skip`).
    Skipped,
    /// Its plan could not be submitted (a module removed since, say): `detail` says why.
    Failed,
}

impl TickResult {
    pub fn as_str(self) -> &'static str {
        match self {
            TickResult::Fired => "fired",
            TickResult::Skipped => "skipped",
            TickResult::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<TickResult> {
        Some(match text {
            "fired" => TickResult::Fired,
            "skipped" => TickResult::Skipped,
            "failed" => TickResult::Failed,
            _ => return None,
        })
    }
}

/// One handled tick, as recorded (the last [`TICKS_KEPT`] per schedule).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Tick {
    pub due_at: Micros,
    pub fired_at: Micros,
    pub result: TickResult,
    #[schema(required = true)]
    pub batch: Option<BatchId>,
    #[schema(required = true)]
    pub detail: Option<String>,
}

/// How many handled ticks a schedule keeps.
pub const TICKS_KEPT: i64 = 100;

/// The batch a tick opens.
#[derive(Debug, Clone)]
pub struct TickBatch {
    pub spec: BatchSpec,
    pub handle_hash: [u8; 32],
    pub tasks: crate::scheduler::Admitted,
}

/// Handling one tick: recorded, the schedule's next tick moved on and its batch opened,
/// in one transaction.
#[derive(Debug, Clone)]
pub struct Fire {
    pub schedule: i64,
    /// The schedule's next tick as the caller read it: the tick is handled only if it still
    /// is (no other node handled it first), and `next_due` replaces it. None: a tick out of
    /// turn (run now), which leaves the next tick as it is.
    pub cursor: Option<Micros>,
    pub next_due: Option<Micros>,
    pub tick: Micros,
    /// Missed ticks passed over on the way, added to the schedule's count.
    pub missed: u64,
    pub result: TickResult,
    pub detail: Option<String>,
    /// The batch to open, for a tick that fires.
    pub batch: Option<TickBatch>,
    pub now: Micros,
}
