//! What runs and what ran: the execution log, the running-now view, health and metrics.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::auth::{Admin, Caller};
use super::error::{ApiError, ApiResult, ErrorBody};
use crate::runtime::Outcome;
use crate::scheduler::Access;
use crate::store::{AttemptFilter, AttemptRecord, BatchId, NodeInfo, RunningTask, TaskId};

/// Most attempts in a page of the log.
pub const MAX_PAGE: usize = 10_000;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LogQuery {
    /// Only this batch's attempts; a batch handle must give its own batch.
    pub batch: Option<BatchId>,
    /// Only this task's attempts.
    pub task: Option<TaskId>,
    /// Only the attempts of this group's tasks.
    pub group: Option<String>,
    /// Only attempts that ended so.
    #[param(value_type = Option<Outcome>)]
    pub outcome: Option<String>,
    /// Only attempts that started at or after this time (microseconds since the Unix
    /// epoch).
    pub since: Option<i64>,
    /// Only attempts that started before this time.
    pub until: Option<i64>,
    /// The `next` of the previous page.
    pub after: Option<i64>,
    /// The most attempts in a page; none: 1000.
    #[param(minimum = 1, maximum = 10000)]
    pub limit: Option<usize>,
}

/// A page of the execution log, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct LogPage {
    pub attempts: Vec<AttemptRecord>,
    /// Pass as `after` for the next page (and to follow the log); none when the log has
    /// nothing yet and no `after` was given.
    #[schema(required = true)]
    pub next: Option<i64>,
}

/// The execution log. A batch handle sees its own batch's attempts only.
#[utoipa::path(
    get,
    path = "/attempts",
    operation_id = "list_attempts",
    tag = "observe",
    params(LogQuery),
    responses(
        (status = 200, description = "A page of attempts", body = LogPage),
        (status = 400, description = "An outcome it does not know, or a limit out of range \
            (`bad-request`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("batch_handle" = [])),
)]
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

/// What runs now: every task started on a slot, on which node and slot.
#[utoipa::path(
    get,
    path = "/running",
    operation_id = "list_running",
    tag = "observe",
    responses((status = 200, description = "The running tasks", body = Vec<RunningTask>)),
    security(("admin_token" = [])),
)]
pub async fn running(State(state): State<AppState>, _: Admin) -> ApiResult<Json<Vec<RunningTask>>> {
    Ok(Json(state.scheduler.running_now().await?))
}

#[utoipa::path(
    get,
    path = "/nodes",
    operation_id = "list_nodes",
    tag = "observe",
    responses((status = 200, description = "The nodes", body = Vec<NodeInfo>)),
    security(("admin_token" = [])),
)]
/// The nodes sharing the store, with their heartbeats.
pub async fn nodes(State(state): State<AppState>, _: Admin) -> ApiResult<Json<Vec<NodeInfo>>> {
    Ok(Json(state.scheduler.nodes().await?))
}

/// Health: `ok` while the server answers.
#[utoipa::path(
    get,
    path = "/healthz",
    operation_id = "health",
    tag = "observe",
    responses((status = 200, description = "It answers", content_type = "text/plain", body = String, example = "ok")),
)]
pub async fn healthz() -> &'static str {
    "ok"
}

/// Prometheus metrics: tasks by state, slots busy, pool occupancy, and the node's claim
/// and run latencies and attempts by outcome.
#[utoipa::path(
    get,
    path = "/metrics",
    operation_id = "metrics",
    tag = "observe",
    responses((status = 200, description = "The Prometheus text format", content_type = "text/plain", body = String)),
)]
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
