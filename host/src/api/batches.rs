//! `/v1/batches`: open a batch (with its tasks, in one request), submit tasks into it,
//! follow, reprioritize, seal, cancel, wait for and release it. Openings and submissions
//! take an `Idempotency-Key` ([`super::keys`]).

use std::time::Duration;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::auth::{Admin, BatchCaller, Opener, SubmitCaller};
use super::body::Upload;
use super::error::{ApiError, ApiResult, ErrorBody};
use super::keys::{KeyHeader, KeyParams, replayed};
use super::tenants::TenantOrigins;
use super::whole;
use crate::runtime::origin;
pub use crate::scheduler::TaskRequest;
use crate::scheduler::{BatchGraph, Keyed};
use crate::store::{
    BatchId, BatchInfo, BatchSpec, FailurePolicy, QuotaChange, Quotas, TaskId, TenantId,
};
use crate::units::parse_duration;

/// Most time a wait may ask for; a client waits longer by asking again.
const MAX_WAIT: Duration = Duration::from_secs(300);

/// A batch to open.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
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
    /// Where the batch's end, and each of its tasks' final failure, is posted as JSON,
    /// signed with `secret` (see the `Qhost-Signature` header); its origin must be within
    /// the server's `--allow-http`. Fixed once the batch is open; views show the URL only.
    #[serde(default)]
    pub webhook: Option<super::webhook::OpenWebhook>,
    /// What it may store, where it differs from the server's defaults (`null`: no quota).
    /// Changed later by `PATCH /v1/batches/{id}/quotas`.
    #[serde(default)]
    pub quotas: QuotaChange,
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

/// Tasks to submit, all or none.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
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

/// A body that must be a JSON object, read as `T`; a refusal names the field. (Read as an
/// object first: serde would take a struct from an array too.)
pub fn object_body<T: serde::de::DeserializeOwned>(
    body: Result<Json<serde_json::Map<String, serde_json::Value>>, JsonRejection>,
) -> ApiResult<T> {
    let object = serde_json::Value::Object(json_body(body)?);
    serde_path_to_error::deserialize(object).map_err(|e| {
        let path = e.path().to_string();
        match path.as_str() {
            "." => ApiError::bad_request(format!("the body: {}", e.inner())),
            _ => ApiError::bad_request(format!("field `{path}`: {}", e.inner())),
        }
    })
}

/// Open a batch. The answer carries its handle, the capability to use it.
#[utoipa::path(
    post,
    path = "/batches",
    operation_id = "open_batch",
    tag = "batches",
    params(KeyParams),
    request_body = OpenBatch,
    responses(
        (status = 201, description = "The batch, and its handle", body = Opened),
        (status = 400, description = "The server's checks refuse a field (`bad-request` or \
            `invalid`, naming it): a task, as a submission's are refused (no module has the \
            digest or name given, more than one input, a duration or size it cannot read or \
            beyond the server's maximum, a mount the server does not have); an `allow_http` \
            origin or a webhook URL outside the server's `--allow-http` (or, for a tenant's \
            batch, outside the origins the admin allows it); a secret setting or \
            a webhook on a server started without a secret key; a setting's name or value \
            past its bounds. For a tenant's batch also: a priority above its ceiling, a \
            group outside its namespace, a module it may not run, a quota above the \
            server's.", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = [])),
)]
pub async fn open(
    State(state): State<AppState>,
    Opener(tenant): Opener,
    KeyHeader(key): KeyHeader,
    mut upload: Upload,
) -> ApiResult<impl IntoResponse> {
    let body: OpenBatch = upload.json().await?;
    let key = key.map(|key| key.of_tenant(tenant));
    let asked = key.as_ref().map(|key| Keyed::new(key, &body));
    let narrowed = TenantOrigins::of(&state, tenant).await?;
    let spec = BatchSpec {
        name: body.name,
        priority: body.priority,
        max_parallel: body.max_parallel,
        failure_policy: body.failure_policy,
        allow_http: allow_http(&state, narrowed.as_ref(), &body.allow_http)?,
        settings: super::settings::sealed(&state, body.settings)?,
        webhook: super::webhook::sealed(&state, narrowed.as_ref(), body.webhook)?,
        quotas: opening_quotas(&state, tenant, body.quotas)?,
        tenant,
    };
    let specs = state.scheduler.task_specs(tenant, body.tasks).await?;
    let opened = state.scheduler.batch_create(spec, specs, asked).await?;
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

/// The quotas a batch opens with: the server's defaults, changed as asked; a tenant may
/// only lower them.
fn opening_quotas(
    state: &AppState,
    tenant: Option<TenantId>,
    asked: QuotaChange,
) -> ApiResult<Quotas> {
    let defaults = state.scheduler.batch_quotas();
    let quotas = defaults.changed(asked);
    match tenant {
        None => Ok(quotas),
        Some(_) => quotas.within(defaults).map_err(ApiError::bad_request),
    }
}

/// Most origins one batch may be granted.
const MAX_ALLOW_HTTP: usize = 100;

/// A batch's grant, checked against the server's list (and its tenant's, if narrowed) and
/// written the one way.
fn allow_http(
    state: &AppState,
    narrowed: Option<&TenantOrigins>,
    origins: &[String],
) -> ApiResult<Vec<String>> {
    if origins.len() > MAX_ALLOW_HTTP {
        return Err(ApiError::bad_request(format!(
            "field `allow_http`: {} origins, more than the {MAX_ALLOW_HTTP} allowed",
            origins.len()
        )));
    }
    let operator = &state.scheduler.runtime.config().allow_http;
    let granted = origin::check_grant(operator, origins)
        .map_err(|e| ApiError::bad_request(format!("field `allow_http`: {e}")))?;
    if let Some(narrowed) = narrowed {
        narrowed.check("allow_http", &granted)?;
    }
    Ok(granted.iter().map(ToString::to_string).collect())
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
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn show(
    State(state): State<AppState>,
    caller: BatchCaller,
) -> ApiResult<Json<BatchInfo>> {
    Ok(Json(state.scheduler.batch_get(caller.batch).await?))
}

/// The batch's dependency edges (`after`), for drawing its graph.
#[utoipa::path(
    get,
    path = "/batches/{id}/graph",
    operation_id = "show_batch_graph",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch's id")),
    responses(
        (status = 200, description = "Its edges, at most 20,000 (`cut` when more)", body = BatchGraph),
        (status = 404, description = "No batch has this id (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn graph(
    State(state): State<AppState>,
    caller: BatchCaller,
) -> ApiResult<Json<BatchGraph>> {
    state.scheduler.batch_get(caller.batch).await?;
    Ok(Json(state.scheduler.batch_graph(caller.batch).await?))
}

/// Submit tasks into a batch, all or none.
#[utoipa::path(
    post,
    path = "/batches/{id}/tasks",
    operation_id = "submit_tasks",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch's id"), KeyParams),
    request_body = Submit,
    responses(
        (status = 201, description = "The tasks' ids", body = Submitted),
        (status = 400, description = "The server's checks refuse a task (`bad-request` or \
            `invalid`, naming the task and field): no module has the digest or name given, \
            more than one input, a duration or size it cannot read or beyond the server's \
            maximum, a mount the server does not have, an order lower than one that has \
            started in the batch; for a tenant's batch, a priority above its ceiling, a \
            group outside its namespace, a module it may not run.", body = ErrorBody),
        (status = 404, description = "No batch has this id (`not-found`).", body = ErrorBody),
        (status = 409, description = "The batch is sealed (`conflict`).", body = ErrorBody),
        (status = 429, description = "Another large upload with this credential is being \
            read (`too-many-requests`).", body = ErrorBody),
        (status = 503, description = "Four large uploads are being read already; try again \
            shortly (`busy`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn submit(
    State(state): State<AppState>,
    caller: SubmitCaller,
    KeyHeader(key): KeyHeader,
    mut upload: Upload,
) -> ApiResult<impl IntoResponse> {
    let body: Submit = upload.json().await?;
    let asked = key.as_ref().map(|key| Keyed::new(key, &body));
    let specs = state
        .scheduler
        .task_specs(caller.tenant, body.tasks)
        .await?;
    let (tasks, repeated) = match asked {
        Some(asked) => {
            state
                .scheduler
                .submit_keyed(&caller.access, caller.batch, specs, asked)
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
    params(KeyParams),
    request_body = TaskRequest,
    responses(
        (status = 201, description = "The task, its batch and the batch's handle", body = SubmittedAlone, links(
            ("task" = (operation_id = "show_task", parameters(("id" = "$response.body#/task")),
                description = "The task, with its state and attempts")),
            ("output" = (operation_id = "task_output", parameters(("id" = "$response.body#/task")),
                description = "Its output, once it has succeeded")),
        )),
        (status = 400, description = "The server's checks refuse the task (`bad-request` or \
            `invalid`, naming the field): no module has the digest or name given, more than \
            one input, a duration or size it cannot read or beyond the server's maximum, a \
            mount the server does not have.", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = [])),
)]
pub async fn submit_alone(
    State(state): State<AppState>,
    Opener(tenant): Opener,
    KeyHeader(key): KeyHeader,
    body: Result<Json<TaskRequest>, JsonRejection>,
) -> ApiResult<impl IntoResponse> {
    let task = json_body(body)?;
    let key = key.map(|key| key.of_tenant(tenant));
    let asked = key.as_ref().map(|key| Keyed::new(key, &task));
    let spec = state.scheduler.task_spec_alone(tenant, task).await?;
    let batch = BatchSpec {
        tenant,
        ..BatchSpec::default()
    };
    let opened = state
        .scheduler
        .batch_create(batch, vec![spec], asked)
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
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
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
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
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
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
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
        (status = 429, description = "The credential, or batch handles together, hold as many \
            waits and event streams as they may (`too-many-requests`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn wait(
    State(state): State<AppState>,
    caller: BatchCaller,
    Query(query): Query<WaitQuery>,
    stopping: Option<Extension<CancellationToken>>,
) -> ApiResult<Json<BatchInfo>> {
    let batch = caller.batch;
    let _long = state.long_polls.take(&caller.access)?;
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
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn release(State(state): State<AppState>, caller: BatchCaller) -> ApiResult<StatusCode> {
    state
        .scheduler
        .batch_release(&caller.access, caller.batch)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Change a batch's quotas: each field given replaces that quota, `null` removes it. What
/// it stores already stays, even past a lowered quota; only what comes next is refused.
#[utoipa::path(
    patch,
    path = "/batches/{id}/quotas",
    operation_id = "set_batch_quotas",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch's id")),
    request_body = QuotaChange,
    responses(
        (status = 200, description = "The batch, with its quotas and usage", body = BatchInfo),
        (status = 404, description = "No batch has this id (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn set_quotas(
    State(state): State<AppState>,
    _: Admin,
    Path(batch): Path<BatchId>,
    body: Result<Json<QuotaChange>, JsonRejection>,
) -> ApiResult<Json<BatchInfo>> {
    let change = json_body(body)?;
    Ok(Json(state.scheduler.batch_set_quotas(batch, change).await?))
}
