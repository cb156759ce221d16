//! Failed and cancelled tasks run again, and bulk actions on the tasks a filter names:
//! `POST /v1/tasks/{id}/retry`, `POST /v1/batches/{id}/retry?outcome=`, and
//! `POST /v1/tasks/retry`, `POST /v1/tasks/cancel`, `PUT /v1/tasks/priority` with the
//! filter `task`, `batch`, `group`, `outcome` in the query. Each answers with a count of
//! what changed.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Query, State};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use super::auth::{BatchCaller, Caller, TaskCaller};
use super::batches::{SetPriority, json_body};
use super::error::{ApiError, ApiResult};
use crate::runtime::Outcome;
use crate::store::{BatchId, TaskId, TaskInfo, TaskSelect};

/// The tasks a bulk action reaches; every filter given applies.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelectQuery {
    pub task: Option<TaskId>,
    pub batch: Option<BatchId>,
    pub group: Option<String>,
    /// Outcomes, comma-separated: of an ended task, how it ended; of one that will run
    /// again, how its last attempt ended.
    pub outcome: Option<String>,
}

impl SelectQuery {
    fn select(self) -> ApiResult<TaskSelect> {
        Ok(TaskSelect {
            task: self.task,
            batch: self.batch,
            group: self.group,
            outcomes: outcomes(self.outcome.as_deref())?,
        })
    }
}

/// `trap,lost` as outcomes.
fn outcomes(text: Option<&str>) -> ApiResult<Vec<Outcome>> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    text.split(',')
        .map(|name| {
            name.trim()
                .parse::<Outcome>()
                .map_err(|e| ApiError::bad_request(format!("parameter `outcome`: {e}")))
        })
        .collect()
}

/// `POST /v1/tasks/{id}/retry`: runs a failed or cancelled task again.
pub async fn retry_task(
    State(state): State<AppState>,
    caller: TaskCaller,
) -> ApiResult<Json<TaskInfo>> {
    let task = state
        .scheduler
        .task_retry(&caller.access, caller.task.id)
        .await?;
    Ok(Json(task))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryQuery {
    pub outcome: Option<String>,
}

/// `POST /v1/batches/{id}/retry?outcome=`: runs the batch's failed tasks again, or those
/// that ended with one of the outcomes named (`cancelled` included).
pub async fn retry_batch(
    State(state): State<AppState>,
    caller: BatchCaller,
    Query(query): Query<RetryQuery>,
) -> ApiResult<Json<Value>> {
    let select = TaskSelect {
        outcomes: outcomes(query.outcome.as_deref())?,
        ..TaskSelect::batch(caller.batch)
    };
    let retried = state.scheduler.tasks_retry(&caller.access, select).await?;
    Ok(Json(json!({ "retried": retried })))
}

/// `POST /v1/tasks/retry?...`: runs the failed tasks the filter names again (with
/// `outcome`, those that ended so, `cancelled` included; a `task` named runs again
/// whether it failed or was cancelled).
pub async fn retry_where(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<SelectQuery>,
) -> ApiResult<Json<Value>> {
    let retried = state
        .scheduler
        .tasks_retry(&caller.0, query.select()?)
        .await?;
    Ok(Json(json!({ "retried": retried })))
}

/// `POST /v1/tasks/cancel?...`: cancels the pending tasks the filter names and stops its
/// running ones.
pub async fn cancel_where(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<SelectQuery>,
) -> ApiResult<Json<Value>> {
    let result = state
        .scheduler
        .tasks_cancel(&caller.0, query.select()?)
        .await?;
    Ok(Json(
        json!({ "cancelled": result.cancelled, "stopping": result.stopping }),
    ))
}

/// `PUT /v1/tasks/priority?...` `{priority}`: sets the priority of the tasks the filter
/// names that have not started.
pub async fn priority_where(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<SelectQuery>,
    body: Result<Json<SetPriority>, JsonRejection>,
) -> ApiResult<Json<Value>> {
    let body = json_body(body)?;
    let changed = state
        .scheduler
        .tasks_set_priority(&caller.0, query.select()?, body.priority)
        .await?;
    Ok(Json(json!({ "changed": changed })))
}
