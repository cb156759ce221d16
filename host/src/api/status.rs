//! `GET /v1/status`: the whole queue at a glance, for an operator: tasks per state, ended
//! totals, the oldest ready task's age, busy groups with their limits, the deepest open
//! batches and the nodes with their slots. Every part is bounded and read from counters
//! or indexes of the tasks not ended.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::auth::Admin;
use super::error::ApiResult;
use crate::store::{BatchDepth, EndedTotals, GroupDepth, NodeInfo, Progress, now_micros};

/// How many open batches the status lists, deepest first.
pub const STATUS_BATCHES: usize = 20;

/// The queue at a glance.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Status {
    /// Tasks in each state now (ended ones until they are pruned).
    pub tasks: Progress,
    /// Tasks that ended so, counted at each end; pruning lowers none.
    pub ended_total: EndedTotals,
    /// Seconds since the oldest claimable task (ready, due, not paused) was submitted;
    /// none when no task is claimable.
    #[schema(required = true)]
    pub oldest_ready_age_seconds: Option<f64>,
    /// Groups with tasks ready or claimed, most such tasks first (at most 100).
    pub groups: Vec<GroupDepth>,
    /// The open batches with most tasks not ended, deepest first (at most 20).
    pub batches: Vec<BatchDepth>,
    /// The nodes sharing the store, each with its slots busy and in all.
    pub nodes: Vec<NodeInfo>,
}

/// The whole queue at a glance: depth per state, per group and per batch, the nodes and
/// their slots, the oldest ready task's age.
#[utoipa::path(
    get,
    path = "/status",
    operation_id = "status",
    tag = "observe",
    responses((status = 200, description = "The queue at a glance", body = Status)),
    security(("admin_token" = [])),
)]
pub async fn status(State(state): State<AppState>, _: Admin) -> ApiResult<Json<Status>> {
    let stats = state.scheduler.queue_stats().await?;
    let batches = state.scheduler.batch_depths(STATUS_BATCHES).await?;
    let nodes = state.scheduler.nodes().await?;
    let oldest_ready_age_seconds = stats.oldest_ready_age(now_micros());
    Ok(Json(Status {
        tasks: stats.counts,
        ended_total: stats.ended_total,
        oldest_ready_age_seconds,
        groups: stats.groups,
        batches,
        nodes,
    }))
}
