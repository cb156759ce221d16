//! `/v1/batches`: open a batch, submit tasks into it, follow, reprioritize, seal, cancel,
//! wait for and release it.

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::AppState;
use super::auth::{Admin, BatchCaller};
use super::body::BodyPermit;
use super::error::{ApiError, ApiResult};
use crate::runtime::{Digest, MountGrant};
use crate::scheduler::{Access, module_ref};
use crate::store::{BatchId, BatchInfo, BatchSpec, FailurePolicy, TaskId, TaskSpec};
use crate::units::{parse_bytes, parse_duration};

/// Most time a wait may ask for; a client waits longer by asking again.
const MAX_WAIT: Duration = Duration::from_secs(300);

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenBatch {
    pub name: Option<String>,
    #[serde(default)]
    pub priority: i32,
    pub max_parallel: Option<u32>,
    #[serde(default)]
    pub failure_policy: FailurePolicy,
}

#[derive(Debug, Serialize)]
pub struct Opened {
    pub batch: BatchInfo,
    /// The capability to use this batch: keep it secret.
    pub handle: String,
}

/// One task of a submission. The input is `input` (text), `input_base64` or `input_json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRequest {
    /// A module's name, its digest, or the start of its digest (at least 6 hex digits).
    pub module: String,
    pub input: Option<String>,
    pub input_base64: Option<String>,
    pub input_json: Option<serde_json::Value>,
    #[serde(default)]
    pub order: i64,
    pub group: Option<String>,
    pub priority: Option<i32>,
    pub max_attempts: Option<u32>,
    /// A duration such as `500ms`.
    pub backoff: Option<String>,
    /// A duration such as `30s`.
    pub timeout: Option<String>,
    /// A size such as `64MiB`.
    pub memory: Option<String>,
    #[serde(default)]
    pub mounts: Vec<MountGrant>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Submit {
    pub tasks: Vec<TaskRequest>,
}

#[derive(Debug, Serialize)]
pub struct Submitted {
    pub tasks: Vec<TaskId>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetPriority {
    pub priority: i32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitQuery {
    pub timeout: Option<String>,
}

pub fn json_body<T>(body: Result<Json<T>, JsonRejection>) -> ApiResult<T> {
    body.map(|Json(value)| value)
        .map_err(|rejection| ApiError::rejected(rejection.status(), rejection.body_text()))
}

pub async fn open(
    State(state): State<AppState>,
    _: Admin,
    body: Result<Json<OpenBatch>, JsonRejection>,
) -> ApiResult<(StatusCode, Json<Opened>)> {
    let body = json_body(body)?;
    let spec = BatchSpec {
        name: body.name,
        priority: body.priority,
        max_parallel: body.max_parallel,
        failure_policy: body.failure_policy,
    };
    let (batch, handle) = state.scheduler.batch_open(spec).await?;
    Ok((StatusCode::CREATED, Json(Opened { batch, handle })))
}

pub async fn show(
    State(state): State<AppState>,
    caller: BatchCaller,
) -> ApiResult<Json<BatchInfo>> {
    Ok(Json(state.scheduler.batch_get(caller.batch).await?))
}

pub async fn submit(
    State(state): State<AppState>,
    caller: BatchCaller,
    _permit: BodyPermit,
    body: Result<Json<Submit>, JsonRejection>,
) -> ApiResult<(StatusCode, Json<Submitted>)> {
    let body = json_body(body)?;
    let modules = resolve_modules(&state, &body.tasks).await?;
    let mut specs = Vec::with_capacity(body.tasks.len());
    for (index, task) in body.tasks.into_iter().enumerate() {
        let spec = task_spec(task, &modules, &state)
            .map_err(|e| ApiError::bad_request(format!("task {index}: {e}")))?;
        specs.push(spec);
    }
    let tasks = state
        .scheduler
        .submit(&caller.access, caller.batch, specs)
        .await?;
    Ok((StatusCode::CREATED, Json(Submitted { tasks })))
}

#[derive(Debug, Serialize)]
pub struct SubmittedAlone {
    pub task: TaskId,
    pub batch: BatchId,
    /// The handle of the task's own batch: it opens this task and nothing else.
    pub handle: String,
}

/// `POST /v1/tasks`: a task submitted alone gets a batch of its own.
pub async fn submit_alone(
    State(state): State<AppState>,
    _: Admin,
    body: Result<Json<TaskRequest>, JsonRejection>,
) -> ApiResult<(StatusCode, Json<SubmittedAlone>)> {
    let task = json_body(body)?;
    let modules = resolve_modules(&state, std::slice::from_ref(&task)).await?;
    let spec = task_spec(task, &modules, &state).map_err(ApiError::bad_request)?;
    let (batch, handle) = state.scheduler.batch_open(BatchSpec::default()).await?;
    match state
        .scheduler
        .submit(&Access::Admin, batch.id, vec![spec])
        .await
    {
        Ok(ids) => Ok((
            StatusCode::CREATED,
            Json(SubmittedAlone {
                task: ids[0],
                batch: batch.id,
                handle,
            }),
        )),
        Err(err) => {
            // Nothing of a refused submission stays: not even its empty batch.
            let _ = state
                .scheduler
                .batch_release(&Access::Admin, batch.id)
                .await;
            Err(err.into())
        }
    }
}

/// The digest each module reference of a submission names (see [`module_ref`]), or why it
/// names none. The modules are listed only when a reference is not a whole digest.
async fn resolve_modules(
    state: &AppState,
    tasks: &[TaskRequest],
) -> ApiResult<HashMap<String, Result<Digest, String>>> {
    let modules = if tasks
        .iter()
        .all(|task| Digest::from_hex(&task.module).is_ok())
    {
        Vec::new()
    } else {
        state.scheduler.module_list().await?
    };
    let mut resolved = HashMap::new();
    for task in tasks {
        if !resolved.contains_key(&task.module) {
            let found = module_ref::find(&task.module, &modules).map(|named| named.newest());
            resolved.insert(task.module.clone(), found);
        }
    }
    Ok(resolved)
}

fn task_spec(
    task: TaskRequest,
    modules: &HashMap<String, Result<Digest, String>>,
    state: &AppState,
) -> Result<TaskSpec, String> {
    let module = modules[&task.module]
        .clone()
        .map_err(|e| format!("field `module`: {e}"))?;
    let input = match (task.input, task.input_base64, task.input_json) {
        (Some(text), None, None) => text.into_bytes(),
        (None, Some(b64), None) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| format!("field `input_base64`: {e}"))?,
        (None, None, Some(json)) => serde_json::to_vec(&json).expect("JSON serializes"),
        (None, None, None) => Vec::new(),
        _ => return Err("give at most one of `input`, `input_base64` and `input_json`".into()),
    };
    let mut limits = state.scheduler.config().default_limits;
    if let Some(timeout) = task.timeout {
        limits.timeout = parse_duration(&timeout).map_err(|e| format!("field `timeout`: {e}"))?;
    }
    if let Some(memory) = task.memory {
        limits.memory = parse_bytes(&memory).map_err(|e| format!("field `memory`: {e}"))?;
    }
    let mut spec = TaskSpec::new(module, input);
    spec.order = task.order;
    spec.group = task.group;
    spec.priority = task.priority;
    spec.limits = limits;
    spec.mounts = task.mounts;
    if let Some(attempts) = task.max_attempts {
        spec.max_attempts = attempts;
    }
    if let Some(backoff) = task.backoff {
        spec.backoff = parse_duration(&backoff).map_err(|e| format!("field `backoff`: {e}"))?;
    }
    Ok(spec)
}

pub async fn set_priority(
    State(state): State<AppState>,
    caller: BatchCaller,
    body: Result<Json<SetPriority>, JsonRejection>,
) -> ApiResult<Json<serde_json::Value>> {
    let body = json_body(body)?;
    let changed = state
        .scheduler
        .batch_set_priority(&caller.access, caller.batch, body.priority)
        .await?;
    Ok(Json(serde_json::json!({ "changed": changed })))
}

pub async fn seal(State(state): State<AppState>, caller: BatchCaller) -> ApiResult<StatusCode> {
    state
        .scheduler
        .batch_seal(&caller.access, caller.batch)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn cancel(
    State(state): State<AppState>,
    caller: BatchCaller,
) -> ApiResult<Json<serde_json::Value>> {
    let cancelled = state
        .scheduler
        .batch_cancel(&caller.access, caller.batch)
        .await?;
    Ok(Json(serde_json::json!({ "cancelled": cancelled })))
}

pub async fn wait(
    State(state): State<AppState>,
    caller: BatchCaller,
    Query(query): Query<WaitQuery>,
    stopping: Option<Extension<CancellationToken>>,
) -> ApiResult<Json<BatchInfo>> {
    let batch = caller.batch;
    let timeout = match query.timeout {
        Some(text) => parse_duration(&text)
            .map_err(|e| ApiError::bad_request(format!("parameter `timeout`: {e}")))?,
        None => Duration::from_secs(30),
    };
    if timeout > MAX_WAIT {
        return Err(ApiError::bad_request(
            "parameter `timeout`: at most 5m; wait again for longer",
        ));
    }
    // A stopping server answers with the progress so far rather than hold its shutdown.
    let stopping = stopping.map(|Extension(t)| t).unwrap_or_default();
    tokio::select! {
        info = state.scheduler.batch_wait(batch, timeout) => Ok(Json(info?)),
        () = stopping.cancelled() => Ok(Json(state.scheduler.batch_get(batch).await?)),
    }
}

pub async fn release(State(state): State<AppState>, caller: BatchCaller) -> ApiResult<StatusCode> {
    state
        .scheduler
        .batch_release(&caller.access, caller.batch)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
