//! What runs and what ran: the execution log, the running-now view, the nodes, health and
//! readiness.

use axum::Json;
use axum::extract::{Query, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::attempt_page;
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
    /// Only attempts written after this position: the `next` of the previous page read
    /// oldest first, or to follow the log. Reads oldest first unless `order` says.
    pub after: Option<i64>,
    /// Only attempts written before this position: the `next` of the previous page read
    /// newest first.
    pub before: Option<i64>,
    /// `newest` first (the default, without `after`) or `oldest` first (the default with
    /// `after`).
    #[param(inline)]
    pub order: Option<LogOrder>,
    /// The most attempts in a page; none: 1000. A page holds fewer when its attempts
    /// reach 8 MiB: read on from its `next` until a page is empty.
    #[param(minimum = 1, maximum = 10000)]
    pub limit: Option<usize>,
}

/// Which end of the log a page starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogOrder {
    Newest,
    Oldest,
}

/// A page of the execution log, in the order asked.
#[derive(Debug, Serialize, ToSchema)]
pub struct LogPage {
    /// The attempts, their error, log lines, stdout and stderr each cut to 1 KiB (`cut`
    /// names those that were).
    pub attempts: Vec<AttemptRecord>,
    /// The position of the page's last attempt: pass it as `before` for the next page
    /// newest first, or as `after` for the next page oldest first (and to follow the
    /// log). With no attempt in the page, the cursor given, or none.
    #[schema(required = true)]
    pub next: Option<i64>,
}

/// The execution log, newest first unless `after` or `order` says otherwise. A batch
/// handle sees its own batch's attempts only.
#[utoipa::path(
    get,
    path = "/attempts",
    operation_id = "list_attempts",
    tag = "observe",
    params(LogQuery),
    responses(
        (status = 200, description = "A page of attempts", body = LogPage),
        (status = 400, description = "An outcome or order it does not know, a limit out of \
            range, or `since` not before `until` (`bad-request`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn log(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<LogQuery>,
) -> ApiResult<Json<LogPage>> {
    if !matches!(caller.0, Access::Admin) {
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
    if let (Some(since), Some(until)) = (query.since, query.until)
        && since >= until
    {
        return Err(ApiError::bad_request(format!(
            "parameters `since` ({since}) and `until` ({until}): `since` must be before `until`"
        )));
    }
    let order = query.order.unwrap_or(if query.after.is_some() {
        LogOrder::Oldest
    } else {
        LogOrder::Newest
    });
    let newest_first = order == LogOrder::Newest;
    let filter = AttemptFilter {
        batch: query.batch,
        task: query.task,
        group: query.group,
        outcome,
        since: query.since,
        until: query.until,
        after: query.after,
        before: query.before,
        newest_first,
        limit: Some(limit),
    };
    let page = attempt_page::read(&state.scheduler, filter, limit, attempt_page::LIST_CUT).await?;
    let cursor = if newest_first {
        query.before
    } else {
        query.after
    };
    let next = page.last().map(|(position, _)| *position).or(cursor);
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

/// Readiness: `ready` once the store is open and migrated and this node registered. A
/// server still starting answers `503 not-ready`, saying what is missing, from the
/// listener it opened first (`api/ready.rs`); `/healthz` answers all along.
#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "ready",
    tag = "observe",
    responses(
        (status = 200, description = "It has started and serves the API", content_type = "text/plain", body = String, example = "ready"),
        (status = 503, description = "It is starting: what is missing (`not-ready`).", body = ErrorBody),
    ),
)]
pub async fn readyz() -> &'static str {
    "ready"
}
