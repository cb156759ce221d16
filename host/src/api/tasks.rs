//! `/v1/tasks` and `/v1/groups`: show a task (with what holds it back), its input and output, cancel or reprioritize it; set
//! and show a group's limit.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::attempt_page;
use super::auth::{Admin, Caller, TaskCaller};
use super::batches::{SetPriority, json_body, object_body};
use super::doc::Binary;
use super::error::{ApiError, ApiResult, ErrorBody};
use super::whole;
use crate::scheduler::rules::WaitingOn;
use crate::store::{
    AttemptFilter, AttemptRecord, CancelResult, GroupInfo, GroupRate, TaskId, TaskInfo, now_micros,
};

/// A task with its entries of the execution log.
#[derive(Debug, Serialize, ToSchema)]
pub struct TaskView {
    #[serde(flatten)]
    pub task: TaskInfo,
    /// Why no node claims it now; none when it is not pending, or is claimable now.
    #[schema(required = true)]
    pub waiting_on: Option<WaitingOn>,
    /// The task's entries of the execution log, oldest first (`attempts` is the task's
    /// count of them): their error, log lines, stdout and stderr each cut to 4 KiB (`cut`
    /// names those that were; `GET /v1/tasks/{id}/attempts/{attempt}` gives one whole),
    /// and as many as fit in 8 MiB (`GET /v1/attempts?task=` pages the rest).
    pub log: Vec<AttemptRecord>,
}

/// A task and its attempts.
#[utoipa::path(
    get,
    path = "/tasks/{id}",
    operation_id = "show_task",
    tag = "tasks",
    params(("id" = i64, Path, description = "The task's id")),
    responses(
        (status = 200, description = "The task", body = TaskView, links(
            ("output" = (operation_id = "task_output", parameters(("id" = "$response.body#/id")),
                description = "Its output, once it has succeeded (`output_size` is its size)")),
            ("input" = (operation_id = "task_input", parameters(("id" = "$response.body#/id")),
                description = "Its input (`input_size` is its size)")),
            ("batch" = (operation_id = "show_batch", parameters(("id" = "$response.body#/batch")),
                description = "Its batch")),
        )),
        (status = 404, description = "No task has this id (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn show(State(state): State<AppState>, caller: TaskCaller) -> ApiResult<Json<TaskView>> {
    let mut info = caller.task;
    let task = info.id;
    let filter = AttemptFilter {
        task: Some(task),
        ..Default::default()
    };
    let log = attempt_page::read(&state.scheduler, filter, usize::MAX, attempt_page::VIEW_CUT)
        .await?
        .into_iter()
        .map(|(_, a)| a)
        .collect();
    let waiting_on = state
        .scheduler
        .waiting_on(std::slice::from_ref(&info), now_micros())
        .await?
        .remove(&task);
    info.cut_error(attempt_page::VIEW_CUT);
    Ok(Json(TaskView {
        task: info,
        waiting_on,
        log,
    }))
}

/// One attempt of a task, whole: its error, log lines, stdout and stderr as kept.
#[utoipa::path(
    get,
    path = "/tasks/{id}/attempts/{attempt}",
    operation_id = "show_attempt",
    tag = "tasks",
    params(
        ("id" = i64, Path, description = "The task's id"),
        ("attempt" = u32, Path, description = "The attempt's number, from 1", minimum = 1),
    ),
    responses(
        (status = 200, description = "The attempt", body = AttemptRecord),
        (status = 404, description = "No task has this id, or it has no such attempt in the \
            log (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn attempt(
    State(state): State<AppState>,
    Caller(access): Caller,
    Path((task, number)): Path<(TaskId, u32)>,
) -> ApiResult<Json<AttemptRecord>> {
    let task = state.scheduler.task_for(&access, task).await?;
    attempt_page::find(&state.scheduler, task.id, number)
        .await?
        .map(Json)
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                super::error::ErrorCode::NotFound,
                format!("task {} has no attempt {number} in the log", task.id),
            )
        })
}

/// A task's output, the bytes its `run` returned.
#[utoipa::path(
    get,
    path = "/tasks/{id}/output",
    operation_id = "task_output",
    tag = "tasks",
    params(("id" = i64, Path, description = "The task's id")),
    responses(
        (status = 200, description = "The output", content_type = "application/octet-stream", body = inline(Binary)),
        (status = 404, description = "No task has this id (`not-found`), or it has no output: \
            it has not succeeded (`no-output`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn output(State(state): State<AppState>, caller: TaskCaller) -> ApiResult<Response> {
    let info = caller.task;
    let task = info.id;
    let output = state.scheduler.task_output(task).await?;
    Ok(match output {
        Some(bytes) => bytes.into_response(),
        None => ApiError::new(
            StatusCode::NOT_FOUND,
            super::error::ErrorCode::NoOutput,
            format!("task {task} has no output: it is {}", info.state.as_str()),
        )
        .into_response(),
    })
}

/// A task's input, the bytes it was submitted with.
#[utoipa::path(
    get,
    path = "/tasks/{id}/input",
    operation_id = "task_input",
    tag = "tasks",
    params(("id" = i64, Path, description = "The task's id")),
    responses(
        (status = 200, description = "The input", content_type = "application/octet-stream", body = inline(Binary)),
        (status = 404, description = "No task has this id (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn input(State(state): State<AppState>, caller: TaskCaller) -> ApiResult<Response> {
    Ok(state
        .scheduler
        .task_input(caller.task.id)
        .await?
        .into_response())
}

/// Cancel a task that has not started, or stop a running one.
#[utoipa::path(
    post,
    path = "/tasks/{id}/cancel",
    operation_id = "cancel_task",
    tag = "tasks",
    params(("id" = i64, Path, description = "The task's id")),
    responses(
        (status = 200, description = "What became of it", body = TaskCancelled),
        (status = 404, description = "No task has this id (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn cancel(
    State(state): State<AppState>,
    caller: TaskCaller,
) -> ApiResult<Json<TaskCancelled>> {
    let result = state
        .scheduler
        .task_cancel(&caller.access, caller.task.id)
        .await?;
    let result = match result {
        CancelResult::Cancelled => CancelOutcome::Cancelled,
        CancelResult::Requested => CancelOutcome::Stopping,
        CancelResult::AlreadyEnded => CancelOutcome::AlreadyEnded,
    };
    Ok(Json(TaskCancelled { result }))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TaskCancelled {
    pub result: CancelOutcome,
}

/// What a cancel did: `cancelled` (it had not started), `stopping` (it runs, and its node
/// was asked to stop it) or `already-ended`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CancelOutcome {
    Cancelled,
    Stopping,
    AlreadyEnded,
}

/// Change the priority of a task that has not started.
#[utoipa::path(
    put,
    path = "/tasks/{id}/priority",
    operation_id = "set_task_priority",
    tag = "tasks",
    params(("id" = i64, Path, description = "The task's id")),
    request_body = SetPriority,
    responses(
        (status = 204, description = "Changed"),
        (status = 404, description = "No task has this id (`not-found`).", body = ErrorBody),
        (status = 409, description = "It has started (`conflict`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
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

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetLimit {
    /// At most this many of the group's tasks run at once (0 holds them all); none: left
    /// as it is.
    #[serde(default, deserialize_with = "whole::option")]
    #[schema(format = Int64, minimum = 0, maximum = 4294967295_u64)]
    pub limit: Option<u32>,
    /// At most `rate.limit` of the group's tasks claimed per `rate.period`, `rate.burst`
    /// at once after a quiet spell; `null` removes the rate; none: left as it is. A task
    /// of a group out of tokens waits, holding no slot.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<SetRate>, nullable = true)]
    pub rate: Option<Option<SetRate>>,
}

/// A group's rate as a request sets it: at most `limit` of its tasks claimed per `period`,
/// `burst` at once after a quiet spell.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetRate {
    /// Tasks claimed per period.
    #[serde(deserialize_with = "whole::int")]
    #[schema(format = Int64, minimum = 1, maximum = 1000000)]
    pub limit: u32,
    /// The period: a whole number of `ms`, `s`, `m`, `h` or `d`, 1ms to 366d.
    #[schema(
        example = "1s",
        pattern = "^([1-9][0-9]{0,5}ms|[1-9][0-9]{0,4}s|[1-9][0-9]{0,3}m|[1-9][0-9]{0,2}h|([1-9][0-9]?|[12][0-9]{2}|3[0-5][0-9]|36[0-6])d)$"
    )]
    pub period: String,
    /// Most tasks claimed at once after a quiet spell; none: 1, which spreads the tasks
    /// evenly over the period.
    #[serde(default, deserialize_with = "whole::option")]
    #[schema(format = Int64, minimum = 1, maximum = 1000000)]
    pub burst: Option<u32>,
}

impl SetRate {
    /// The rate it names, checked.
    fn rate(&self) -> Result<GroupRate, crate::scheduler::Error> {
        let period = crate::units::parse_duration(&self.period)
            .map_err(|e| crate::scheduler::Error::Invalid(format!("`rate.period`: {e}")))?;
        let rate = GroupRate {
            limit: self.limit,
            period,
            burst: self.burst.unwrap_or(1),
        };
        rate.check().map_err(crate::scheduler::Error::Invalid)?;
        Ok(rate)
    }
}

/// A field that may be absent (`None`) or `null` (`Some(None)`).
pub(crate) fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// Set how many tasks of a group run at once, across batches, and how many are claimed
/// per period (its rate). A field left out is left as it is.
#[utoipa::path(
    put,
    path = "/groups/{key}",
    operation_id = "set_group_limit",
    tag = "tasks",
    params(("key" = String, Path, description = "The group's key", min_length = 1, max_length = 200)),
    request_body = SetLimit,
    responses(
        (status = 200, description = "The group", body = GroupInfo),
        (status = 400, description = "The server's checks refuse the key or the rate \
            (`invalid`), or the body is not an object (`bad-request`).", body = ErrorBody),
        (status = 404, description = "The body sets nothing and no task has named this \
            group (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn set_group_limit(
    State(state): State<AppState>,
    _: Admin,
    Path(key): Path<String>,
    body: Result<Json<serde_json::Map<String, serde_json::Value>>, JsonRejection>,
) -> ApiResult<Json<GroupInfo>> {
    let body: SetLimit = object_body(body)?;
    // Checked before the limit is set: a request refused changes nothing.
    let rate = match &body.rate {
        Some(Some(rate)) => Some(Some(rate.rate()?)),
        Some(None) => Some(None),
        None => None,
    };
    if let Some(limit) = body.limit {
        state.scheduler.group_set_limit(key.clone(), limit).await?;
    }
    if let Some(rate) = rate {
        state.scheduler.group_set_rate(key.clone(), rate).await?;
    }
    Ok(Json(state.scheduler.group_get(key).await?))
}

/// A group's limit, and how many of its tasks run and wait.
#[utoipa::path(
    get,
    path = "/groups/{key}",
    operation_id = "show_group",
    tag = "tasks",
    params(("key" = String, Path, description = "The group's key", min_length = 1, max_length = 200)),
    responses(
        (status = 200, description = "The group", body = GroupInfo),
        (status = 404, description = "No task has named this group, and no limit was set \
            for it (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn show_group(
    State(state): State<AppState>,
    _: Admin,
    Path(key): Path<String>,
) -> ApiResult<Json<GroupInfo>> {
    Ok(Json(state.scheduler.group_get(key).await?))
}
