//! What runs and what ran: the execution log, the running-now view, health and metrics.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::auth::{Admin, Caller};
use super::error::{ApiError, ApiResult};
use crate::runtime::Outcome;
use crate::scheduler::Access;
use crate::store::{AttemptFilter, AttemptRecord, BatchId, NodeInfo, RunningTask, TaskId};

const MAX_PAGE: usize = 10_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogQuery {
    pub batch: Option<BatchId>,
    pub task: Option<TaskId>,
    pub group: Option<String>,
    pub outcome: Option<String>,
    /// Microseconds since the Unix epoch.
    pub since: Option<i64>,
    pub until: Option<i64>,
    /// The `next` of the previous page.
    pub after: Option<i64>,
    pub limit: Option<usize>,
}

#[derive(Debug, Serialize)]
pub struct LogPage {
    pub attempts: Vec<AttemptRecord>,
    /// Pass as `after` for the next page (and to follow the log).
    pub next: Option<i64>,
}

/// The execution log. A batch handle sees its own batch's attempts only.
pub async fn log(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<LogQuery>,
) -> ApiResult<Json<LogPage>> {
    if let Access::Handle(_) = caller.0 {
        let batch = query.batch.ok_or_else(ApiError::forbidden)?;
        state.scheduler.authorize(&caller.0, batch).await?;
    }
    let outcome = match query.outcome {
        Some(text) => Some(
            text.parse::<Outcome>()
                .map_err(|e| ApiError::bad_request(format!("parameter `outcome`: {e}")))?,
        ),
        None => None,
    };
    let limit = query.limit.unwrap_or(1000);
    if limit == 0 || limit > MAX_PAGE {
        return Err(ApiError::bad_request(format!(
            "parameter `limit`: 1 to {MAX_PAGE}"
        )));
    }
    let filter = AttemptFilter {
        batch: query.batch,
        task: query.task,
        group: query.group,
        outcome,
        since: query.since,
        until: query.until,
        after: query.after,
        limit: Some(limit),
    };
    let page = state.scheduler.attempt_list(filter).await?;
    let next = page.last().map(|(position, _)| *position).or(query.after);
    Ok(Json(LogPage {
        attempts: page.into_iter().map(|(_, a)| a).collect(),
        next,
    }))
}

pub async fn running(State(state): State<AppState>, _: Admin) -> ApiResult<Json<Vec<RunningTask>>> {
    Ok(Json(state.scheduler.running_now().await?))
}

/// The nodes sharing the store, with their heartbeats.
pub async fn nodes(State(state): State<AppState>, _: Admin) -> ApiResult<Json<Vec<NodeInfo>>> {
    Ok(Json(state.scheduler.nodes().await?))
}

pub async fn healthz() -> &'static str {
    "ok"
}

/// Prometheus text format: tasks by state, slots busy, pool occupancy, and the node's
/// claim and run latencies and attempts by outcome.
pub async fn metrics(State(state): State<AppState>) -> ApiResult<impl IntoResponse> {
    let counts = state.scheduler.task_counts().await?;
    let runtime = state.scheduler.runtime();
    let mut text =
        String::from("# HELP qhost_tasks Tasks in the store by state.\n# TYPE qhost_tasks gauge\n");
    for (name, value) in [
        ("waiting", counts.waiting),
        ("ready", counts.ready),
        ("held", counts.held),
        ("reserved", counts.reserved),
        ("running", counts.running),
        ("succeeded", counts.succeeded),
        ("failed", counts.failed),
        ("cancelled", counts.cancelled),
    ] {
        text.push_str(&format!("qhost_tasks{{state=\"{name}\"}} {value}\n"));
    }
    text.push_str("# HELP qhost_slots_busy Instance slots running a task on this node.\n# TYPE qhost_slots_busy gauge\n");
    text.push_str(&format!("qhost_slots_busy {}\n", runtime.busy_slots()));
    text.push_str("# HELP qhost_slots Instance slots of this node.\n# TYPE qhost_slots gauge\n");
    text.push_str(&format!("qhost_slots {}\n", runtime.config().workers));
    let occupancy = runtime.busy_slots() as f64 / runtime.config().workers.max(1) as f64;
    text.push_str("# HELP qhost_pool_occupancy Share of this node's instance slots running a task.\n# TYPE qhost_pool_occupancy gauge\n");
    text.push_str(&format!("qhost_pool_occupancy {occupancy}\n"));
    let held = state.scheduler.running.lock().expect("running lock").len();
    text.push_str("# HELP qhost_tasks_held Tasks this node has claimed and not completed, running or about to.\n# TYPE qhost_tasks_held gauge\n");
    text.push_str(&format!("qhost_tasks_held {held}\n"));
    state.scheduler.metrics.render(&mut text);
    Ok(([(CONTENT_TYPE, "text/plain; version=0.0.4")], text))
}
