//! What an operator reads of the whole queue: tasks per state, ended totals, the oldest
//! ready task, groups and the deepest batches. Each is read from counters the drivers keep
//! or from indexes of the few tasks that have not ended, so reading costs the same however
//! many tasks ended.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{BatchId, Micros, Progress};

/// How many groups and batches a read of the queue lists at most.
pub const MAX_LISTED: usize = 100;

/// Tasks that ended so, counted at each end: a task run again and ended again counts
/// twice, and pruning lowers none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EndedTotals {
    pub succeeded: u64,
    pub failed: u64,
    pub cancelled: u64,
}

/// A group with tasks ready or claimed, and its limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct GroupDepth {
    pub key: String,
    /// Its limit; while paused, the limit it gets back on resume.
    #[schema(format = Int64, maximum = 4294967295_u64)]
    pub limit: u32,
    pub paused: bool,
    /// Its tasks claimed now (reserved or running).
    pub running: u64,
    /// Its tasks due and not claimed: `ready`, or `held` while it or their batch is
    /// paused (delayed ones are `waiting`).
    pub ready: u64,
    /// Its rate; none: it has no rate.
    #[serde(default)]
    #[schema(required = true)]
    pub rate: Option<super::GroupRate>,
    /// Tokens its rate has left now: how many of its tasks a claim may take now, room
    /// allowing; none without a rate.
    #[serde(default)]
    #[schema(required = true)]
    pub tokens: Option<u64>,
}

impl GroupDepth {
    /// The rate and tokens at `now` of a group's stored rate columns `rate_limit`,
    /// `rate_period`, `rate_burst` and its `tat`.
    pub fn rate_at(
        (limit, period, burst): (Option<i64>, Option<i64>, Option<i64>),
        tat: Option<i64>,
        now: super::Micros,
    ) -> (Option<super::GroupRate>, Option<u64>) {
        let rate = super::GroupRate::from_stored(limit, period, burst);
        let tokens = rate.map(|r| r.bucket(tat.unwrap_or(0)).tokens(now).max(0) as u64);
        (rate, tokens)
    }
}

/// A batch with tasks that have not ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct BatchDepth {
    pub batch: BatchId,
    #[schema(required = true)]
    pub name: Option<String>,
    /// Its tasks that have not ended: waiting, ready, reserved or running.
    pub open: u64,
    pub paused: bool,
}

/// The whole queue at a glance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Tasks in each state now (ended ones until they are pruned).
    pub counts: Progress,
    pub ended_total: EndedTotals,
    /// When the oldest claimable task (ready, due, not held by a pause) was submitted.
    pub oldest_ready: Option<Micros>,
    /// Groups with tasks ready or claimed, most such tasks first, at most [`MAX_LISTED`].
    pub groups: Vec<GroupDepth>,
}

impl QueueStats {
    /// Seconds from the oldest claimable task's submission to `now`; none when no task is.
    pub fn oldest_ready_age(&self, now: Micros) -> Option<f64> {
        self.oldest_ready.map(|at| (now - at).max(0) as f64 / 1e6)
    }
}
