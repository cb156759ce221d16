//! `/v1/tasks` and `/v1/groups`: show a task, its output, cancel or reprioritize it; set
//! and show a group's limit.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::AppState;
use super::auth::{Admin, TaskCaller};
use super::batches::{SetPriority, json_body};
use super::error::ApiResult;
use crate::store::{AttemptFilter, AttemptRecord, CancelResult, GroupInfo, TaskInfo};

#[derive(Debug, Serialize)]
pub struct TaskView {
    #[serde(flatten)]
    pub task: TaskInfo,
    /// The task's entries of the execution log (`attempts` is the task's count of them).
    pub log: Vec<AttemptRecord>,
}

pub async fn show(State(state): State<AppState>, caller: TaskCaller) -> ApiResult<Json<TaskView>> {
    let info = caller.task;
    let task = info.id;
    let log = state
        .scheduler
        .attempt_list(AttemptFilter {
            task: Some(task),
            ..Default::default()
        })
        .await?
        .into_iter()
        .map(|(_, a)| a)
        .collect();
    Ok(Json(TaskView { task: info, log }))
}

pub async fn output(State(state): State<AppState>, caller: TaskCaller) -> ApiResult<Response> {
    let info = caller.task;
    let task = info.id;
    let output = state.scheduler.task_output(task).await?;
    Ok(match output {
        Some(bytes) => bytes.into_response(),
        None => super::error::ApiError::new(
            StatusCode::NOT_FOUND,
            "no-output",
            format!("task {task} has no output: it is {}", info.state.as_str()),
        )
        .into_response(),
    })
}

pub async fn cancel(
    State(state): State<AppState>,
    caller: TaskCaller,
) -> ApiResult<Json<serde_json::Value>> {
    let result = state
        .scheduler
        .task_cancel(&caller.access, caller.task.id)
        .await?;
    let result = match result {
        CancelResult::Cancelled => "cancelled",
        CancelResult::Requested => "stopping",
        CancelResult::AlreadyEnded => "already-ended",
    };
    Ok(Json(serde_json::json!({ "result": result })))
}

pub async fn set_priority(
    State(state): State<AppState>,
    caller: TaskCaller,
    body: Result<Json<SetPriority>, JsonRejection>,
) -> ApiResult<StatusCode> {
    let body = json_body(body)?;
    state
        .scheduler
        .task_set_priority(&caller.access, caller.task.id, body.priority)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetLimit {
    pub limit: u32,
}

pub async fn set_group_limit(
    State(state): State<AppState>,
    _: Admin,
    Path(key): Path<String>,
    body: Result<Json<SetLimit>, JsonRejection>,
) -> ApiResult<Json<GroupInfo>> {
    let body = json_body(body)?;
    state
        .scheduler
        .group_set_limit(key.clone(), body.limit)
        .await?;
    Ok(Json(state.scheduler.group_get(key).await?))
}

pub async fn show_group(
    State(state): State<AppState>,
    _: Admin,
    Path(key): Path<String>,
) -> ApiResult<Json<GroupInfo>> {
    Ok(Json(state.scheduler.group_get(key).await?))
}
