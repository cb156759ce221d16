//! `/v1/batches`: open a batch (with its tasks, in one request), submit tasks into it,
//! follow, reprioritize, seal, cancel, wait for and release it. Openings and submissions
//! take an `Idempotency-Key` ([`super::keys`]).

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::{Extension, Json};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::auth::{Admin, BatchCaller};
use super::body::BodyPermit;
use super::error::{ApiError, ApiResult, ErrorBody};
use super::keys::{KeyHeader, replayed};
use super::whole;
use crate::runtime::{Digest, MountGrant, origin};
use crate::scheduler::module_ref;
use crate::store::{BatchId, BatchInfo, BatchSpec, FailurePolicy, TaskId, TaskSpec, now_micros};
use crate::units::{parse_bytes, parse_duration, parse_time};

/// Most time a wait may ask for; a client waits longer by asking again.
const MAX_WAIT: Duration = Duration::from_secs(300);

/// A batch to open.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenBatch {
    #[schema(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    /// The priority of its tasks that give none; higher first.
    #[serde(default, deserialize_with = "whole::int")]
    pub priority: i32,
    /// At most this many of its tasks run at once (0 holds them all); none: no limit.
    #[serde(default, deserialize_with = "whole::option")]
    #[schema(format = Int64, minimum = 0, maximum = 4294967295_u64)]
    pub max_parallel: Option<u32>,
    #[serde(default)]
    pub failure_policy: FailurePolicy,
    /// The origins its tasks may reach over HTTP, each `SCHEME://HOST[:PORT|:*]` (such as
    /// `https://api.example.com`) and within the server's `--allow-http`; none: no
    /// outbound HTTP. Fixed once the batch is open.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub allow_http: Vec<String>,
    /// Named values its tasks read through `wasi:config/store`: text, or
    /// `{"value": ..., "secret": true}`. A secret is sealed at rest and no answer shows
    /// it; the API shows no setting's value. Fixed once the batch is open.
    #[serde(default)]
    pub settings: std::collections::BTreeMap<String, super::settings::SettingValue>,
    /// Tasks submitted with the opening, in the same transaction: if one is refused, no
    /// batch is opened.
    #[serde(default)]
    pub tasks: Vec<TaskRequest>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Opened {
    pub batch: BatchInfo,
    /// The capability to use this batch: keep it secret.
    pub handle: String,
    /// The ids of the tasks submitted with the opening, if any.
    #[schema(required = true)]
    pub tasks: Vec<TaskId>,
}

/// One task of a submission. Its input is at most one of `input` (text), `input_base64`
/// and `input_json`; none gives it an empty input.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskRequest {
    /// A module's name, its digest, or the start of its digest (at least 6 hex digits).
    pub module: String,
    /// The input as text.
    pub input: Option<String>,
    /// The input as bytes, in standard base64 with padding.
    #[schema(
        pattern = "^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$",
        content_encoding = "base64"
    )]
    pub input_base64: Option<String>,
    /// The input as a JSON value, which the task receives serialized.
    #[schema(value_type = Option<Value>)]
    pub input_json: Option<serde_json::Value>,
    /// Its place in the batch's order: no task starts before every task of a lower
    /// order in its batch has ended.
    #[serde(default, deserialize_with = "whole::int")]
    pub order: i64,
    /// At most the group's limit of tasks of a group run at once, across batches.
    #[schema(min_length = 1, max_length = 200)]
    pub group: Option<String>,
    /// Higher first; none: the batch's priority.
    #[serde(default, deserialize_with = "whole::option")]
    pub priority: Option<i32>,
    /// How many times it may run, retries included; none: 3.
    #[serde(default, deserialize_with = "whole::option")]
    #[schema(minimum = 1, maximum = 100)]
    pub max_attempts: Option<u32>,
    /// The delay before the first retry, doubled for each further one: a duration such
    /// as `500ms`, at most `1h`; none: `1s`.
    pub backoff: Option<String>,
    /// The longest one attempt may run: a duration such as `30s`, within the server's
    /// maximum; none: the server's default.
    pub timeout: Option<String>,
    /// Its memory limit: a size such as `64MiB`, at least `64KiB`, within the server's
    /// maximum; none: the server's default.
    pub memory: Option<String>,
    /// Mounts of the server's the task may use.
    #[serde(default)]
    pub mounts: Vec<MountGrant>,
    /// Outbound HTTP requests one attempt may make, refused ones included, within the
    /// server's maximum; none: 100.
    #[serde(default, deserialize_with = "whole::option")]
    #[schema(minimum = 0, maximum = 10000)]
    pub http_requests: Option<u32>,
    /// Request body bytes one attempt may send over HTTP: a size such as `1MiB`, within
    /// the server's maximum; none: `1MiB`.
    pub http_sent: Option<String>,
    /// Response body bytes one attempt may receive over HTTP: a size such as `16MiB`,
    /// within the server's maximum; none: `16MiB`.
    pub http_received: Option<String>,
    /// The longest one HTTP request may take, to the end of its response: a duration
    /// such as `30s`, within the server's maximum; none: `30s`.
    pub http_timeout: Option<String>,
    /// Not due before this RFC 3339 time, such as `2026-11-24T09:00:00Z`.
    pub run_at: Option<String>,
    /// Not due before this long after submission, such as `90s`.
    pub delay: Option<String>,
}

/// Tasks to submit, all or none.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Submit {
    #[schema(min_items = 1, max_items = 100000)]
    pub tasks: Vec<TaskRequest>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Submitted {
    /// The tasks' ids, in the order submitted.
    pub tasks: Vec<TaskId>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetPriority {
    /// Higher first.
    #[serde(deserialize_with = "whole::int")]
    pub priority: i32,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PriorityChanged {
    /// How many of its tasks that had not started took the new priority.
    pub changed: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BatchCancelled {
    /// How many of its pending tasks were cancelled (its running ones are asked to stop,
    /// and are not counted).
    pub cancelled: u64,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct WaitQuery {
    /// The longest to wait, at most `5m`, in milliseconds (`500ms`), seconds (`30s`) or
    /// minutes (`2m`); none: `30s`.
    #[param(pattern = "^(0|[0-9]{1,5}ms|([0-9]{1,2}|[12][0-9]{2}|300)s|[0-5]m)$")]
    pub timeout: Option<String>,
}

pub fn json_body<T>(body: Result<Json<T>, JsonRejection>) -> ApiResult<T> {
    body.map(|Json(value)| value)
        .map_err(|rejection| ApiError::rejected(rejection.status(), rejection.body_text()))
}

/// Open a batch. The answer carries its handle, the capability to use it.
#[utoipa::path(
    post,
    path = "/batches",
    operation_id = "open_batch",
    tag = "batches",
    request_body = OpenBatch,
    responses(
        (status = 201, description = "The batch, and its handle", body = Opened),
        (status = 400, description = "The server's checks refuse a field (`invalid`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn open(
    State(state): State<AppState>,
    _: Admin,
    KeyHeader(key): KeyHeader,
    _permit: BodyPermit,
    body: Result<Json<OpenBatch>, JsonRejection>,
) -> ApiResult<impl IntoResponse> {
    let body = json_body(body)?;
    let spec = BatchSpec {
        name: body.name,
        priority: body.priority,
        max_parallel: body.max_parallel,
        failure_policy: body.failure_policy,
        allow_http: allow_http(&state, &body.allow_http)?,
        settings: super::settings::sealed(&state, body.settings)?,
    };
    let specs = task_specs(&state, body.tasks).await?;
    let opened = state
        .scheduler
        .batch_create(spec, specs, key.as_ref())
        .await?;
    Ok((
        StatusCode::CREATED,
        replayed(opened.repeated),
        Json(Opened {
            batch: opened.batch,
            handle: opened.handle,
            tasks: opened.tasks,
        }),
    ))
}

/// Most origins one batch may be granted.
const MAX_ALLOW_HTTP: usize = 100;

/// A batch's grant, checked against the server's list and written the one way.
fn allow_http(state: &AppState, origins: &[String]) -> ApiResult<Vec<String>> {
    if origins.len() > MAX_ALLOW_HTTP {
        return Err(ApiError::bad_request(format!(
            "field `allow_http`: {} origins, more than the {MAX_ALLOW_HTTP} allowed",
            origins.len()
        )));
    }
    let operator = &state.scheduler.runtime.config().allow_http;
    let granted = origin::check_grant(operator, origins)
        .map_err(|e| ApiError::bad_request(format!("field `allow_http`: {e}")))?;
    Ok(granted.iter().map(ToString::to_string).collect())
}

/// The specs of a submission's tasks, their modules resolved.
pub(super) async fn task_specs(
    state: &AppState,
    tasks: Vec<TaskRequest>,
) -> ApiResult<Vec<TaskSpec>> {
    let modules = resolve_modules(state, &tasks).await?;
    let mut specs = Vec::with_capacity(tasks.len());
    for (index, task) in tasks.into_iter().enumerate() {
        let spec = task_spec(task, &modules, state)
            .map_err(|e| ApiError::bad_request(format!("task {index}: {e}")))?;
        specs.push(spec);
    }
    Ok(specs)
}

/// A batch and its progress.
#[utoipa::path(
    get,
    path = "/batches/{id}",
    operation_id = "show_batch",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch's id")),
    responses(
        (status = 200, description = "The batch", body = BatchInfo),
        (status = 404, description = "No batch has this id (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("batch_handle" = [])),
)]
pub async fn show(
    State(state): State<AppState>,
    caller: BatchCaller,
) -> ApiResult<Json<BatchInfo>> {
    Ok(Json(state.scheduler.batch_get(caller.batch).await?))
}

/// Submit tasks into a batch, all or none.
#[utoipa::path(
    post,
    path = "/batches/{id}/tasks",
    operation_id = "submit_tasks",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch's id")),
    request_body = Submit,
    responses(
        (status = 201, description = "The tasks' ids", body = Submitted),
        (status = 400, description = "The server's checks refuse a task (`bad-request` or \
            `invalid`, naming the task and field): no module has the digest or name given, \
            more than one input, a duration or size it cannot read or beyond the server's \
            maximum, a mount the server does not have, an order lower than one that has \
            started in the batch.", body = ErrorBody),
        (status = 404, description = "No batch has this id (`not-found`).", body = ErrorBody),
        (status = 409, description = "The batch is sealed (`conflict`).", body = ErrorBody),
        (status = 503, description = "Four large uploads are being read already; try again \
            shortly (`busy`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("batch_handle" = [])),
)]
pub async fn submit(
    State(state): State<AppState>,
    caller: BatchCaller,
    KeyHeader(key): KeyHeader,
    _permit: BodyPermit,
    body: Result<Json<Submit>, JsonRejection>,
) -> ApiResult<impl IntoResponse> {
    let body = json_body(body)?;
    let specs = task_specs(&state, body.tasks).await?;
    let (tasks, repeated) = match key {
        Some(key) => {
            state
                .scheduler
                .submit_keyed(&caller.access, caller.batch, specs, &key)
                .await?
        }
        None => {
            let ids = state
                .scheduler
                .submit(&caller.access, caller.batch, specs)
                .await?;
            (ids, false)
        }
    };
    Ok((
        StatusCode::CREATED,
        replayed(repeated),
        Json(Submitted { tasks }),
    ))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SubmittedAlone {
    pub task: TaskId,
    pub batch: BatchId,
    /// The handle of the task's own batch: it opens this task and nothing else.
    pub handle: String,
}

/// Submit one task alone: it gets a batch of its own, whose handle opens this task and
/// nothing else.
#[utoipa::path(
    post,
    path = "/tasks",
    operation_id = "submit_task",
    tag = "tasks",
    request_body = TaskRequest,
    responses(
        (status = 201, description = "The task, its batch and the batch's handle", body = SubmittedAlone),
        (status = 400, description = "The server's checks refuse the task (`bad-request` or \
            `invalid`, naming the field): no module has the digest or name given, more than \
            one input, a duration or size it cannot read or beyond the server's maximum, a \
            mount the server does not have.", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn submit_alone(
    State(state): State<AppState>,
    _: Admin,
    KeyHeader(key): KeyHeader,
    body: Result<Json<TaskRequest>, JsonRejection>,
) -> ApiResult<impl IntoResponse> {
    let task = json_body(body)?;
    let modules = resolve_modules(&state, std::slice::from_ref(&task)).await?;
    let spec = task_spec(task, &modules, &state).map_err(ApiError::bad_request)?;
    let opened = state
        .scheduler
        .batch_create(BatchSpec::default(), vec![spec], key.as_ref())
        .await?;
    Ok((
        StatusCode::CREATED,
        replayed(opened.repeated),
        Json(SubmittedAlone {
            task: opened.tasks[0],
            batch: opened.batch.id,
            handle: opened.handle,
        }),
    ))
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
            let found = module_ref::find(&task.module, &modules).map(|named| named.digest());
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
    if let Some(requests) = task.http_requests {
        limits.http_requests = requests;
    }
    if let Some(sent) = task.http_sent {
        limits.http_sent = parse_bytes(&sent).map_err(|e| format!("field `http_sent`: {e}"))?;
    }
    if let Some(received) = task.http_received {
        limits.http_received =
            parse_bytes(&received).map_err(|e| format!("field `http_received`: {e}"))?;
    }
    if let Some(timeout) = task.http_timeout {
        limits.http_timeout =
            parse_duration(&timeout).map_err(|e| format!("field `http_timeout`: {e}"))?;
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
    spec.not_before = match (task.run_at, task.delay) {
        (None, None) => None,
        (Some(at), None) => Some(parse_time(&at).map_err(|e| format!("field `run_at`: {e}"))?),
        (None, Some(delay)) => {
            let delay = parse_duration(&delay).map_err(|e| format!("field `delay`: {e}"))?;
            let delay = i64::try_from(delay.as_micros()).unwrap_or(i64::MAX);
            Some(now_micros().saturating_add(delay))
        }
        (Some(_), Some(_)) => return Err("give at most one of `run_at` and `delay`".into()),
    };
    Ok(spec)
}

/// Change the priority of a batch and of its tasks that have not started.
#[utoipa::path(
    put,
    path = "/batches/{id}/priority",
    operation_id = "set_batch_priority",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch's id")),
    request_body = SetPriority,
    responses(
        (status = 200, description = "How many tasks took it", body = PriorityChanged),
        (status = 404, description = "No batch has this id (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("batch_handle" = [])),
)]
pub async fn set_priority(
    State(state): State<AppState>,
    caller: BatchCaller,
    body: Result<Json<SetPriority>, JsonRejection>,
) -> ApiResult<Json<PriorityChanged>> {
    let body = json_body(body)?;
    let changed = state
        .scheduler
        .batch_set_priority(&caller.access, caller.batch, body.priority)
        .await?;
    Ok(Json(PriorityChanged { changed }))
}

/// Seal a batch: it takes no more tasks.
#[utoipa::path(
    post,
    path = "/batches/{id}/seal",
    operation_id = "seal_batch",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch's id")),
    responses(
        (status = 204, description = "Sealed"),
        (status = 404, description = "No batch has this id (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("batch_handle" = [])),
)]
pub async fn seal(State(state): State<AppState>, caller: BatchCaller) -> ApiResult<StatusCode> {
    state
        .scheduler
        .batch_seal(&caller.access, caller.batch)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Cancel a batch's pending tasks and stop its running ones.
#[utoipa::path(
    post,
    path = "/batches/{id}/cancel",
    operation_id = "cancel_batch",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch's id")),
    responses(
        (status = 200, description = "How many were cancelled", body = BatchCancelled),
        (status = 404, description = "No batch has this id (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("batch_handle" = [])),
)]
pub async fn cancel(
    State(state): State<AppState>,
    caller: BatchCaller,
) -> ApiResult<Json<BatchCancelled>> {
    let cancelled = state
        .scheduler
        .batch_cancel(&caller.access, caller.batch)
        .await?;
    Ok(Json(BatchCancelled { cancelled }))
}

/// Wait until every task of the batch has ended, or the timeout passes (a long poll):
/// the batch and its progress either way.
#[utoipa::path(
    get,
    path = "/batches/{id}/wait",
    operation_id = "wait_batch",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch's id"), WaitQuery),
    responses(
        (status = 200, description = "The batch", body = BatchInfo),
        (status = 400, description = "A timeout it cannot read, or longer than `5m` \
            (`bad-request`).", body = ErrorBody),
        (status = 404, description = "No batch has this id (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("batch_handle" = [])),
)]
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

/// Release a batch whose tasks have all ended: forget it, its tasks and their records.
#[utoipa::path(
    delete,
    path = "/batches/{id}",
    operation_id = "release_batch",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch's id")),
    responses(
        (status = 204, description = "Released"),
        (status = 404, description = "No batch has this id (`not-found`).", body = ErrorBody),
        (status = 409, description = "Some of its tasks have not ended; cancel it first \
            (`conflict`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("batch_handle" = [])),
)]
pub async fn release(State(state): State<AppState>, caller: BatchCaller) -> ApiResult<StatusCode> {
    state
        .scheduler
        .batch_release(&caller.access, caller.batch)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
