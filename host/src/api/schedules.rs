//! `/v1/schedules`: schedules that open a batch from a plan at each tick of a cron
//! expression (admin only), and the compiler that turns a plan into a tick's batch.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::auth::Admin;
use super::batches::{TaskRequest, json_body, task_specs};
use super::error::{ApiError, ApiResult, ErrorBody};
use crate::schedules::ticker::Compile;
use crate::store::{BatchSpec, FailurePolicy, Micros, ScheduleInfo, ScheduleSpec, Tick, TickBatch};

/// `POST /v1/schedules`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSchedule {
    pub name: String,
    /// `MIN HOUR DAY MONTH WEEKDAY`, with seconds first if six fields.
    pub cron: String,
    /// An IANA time zone name; UTC when absent.
    #[serde(default = "utc")]
    pub timezone: String,
    /// The plan each tick opens a batch from: `priority`, `max_parallel`,
    /// `failure_policy` and `tasks` (as a submission's).
    #[schema(value_type = Object)]
    pub plan: serde_json::Value,
    /// `skip` (default), `queue` or `allow`.
    #[serde(default = "skip")]
    pub overlap: String,
    /// `none` (default), `last` or `all:N`.
    #[serde(default = "none")]
    pub catch_up: String,
}

fn utc() -> String {
    "UTC".into()
}
fn skip() -> String {
    "skip".into()
}
fn none() -> String {
    "none".into()
}

/// A schedule's plan: the settings of the batch each tick opens, and its tasks.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Plan {
    #[serde(default)]
    #[allow(dead_code)] // Each tick's batch is named after the schedule and the tick.
    name: Option<String>,
    #[serde(default)]
    priority: i32,
    max_parallel: Option<u32>,
    #[serde(default)]
    failure_policy: FailurePolicy,
    tasks: Vec<TaskRequest>,
}

/// The batch a tick of `schedule` at `tick` opens, or why it cannot.
async fn compile(state: &AppState, schedule: &ScheduleInfo, tick: Micros) -> ApiResult<TickBatch> {
    let plan: Plan = serde_json::from_value(schedule.plan.clone())
        .map_err(|e| ApiError::bad_request(format!("field `plan`: {e}")))?;
    if plan.tasks.is_empty() {
        return Err(ApiError::bad_request("field `plan`: it has no tasks"));
    }
    let at = jiff::Timestamp::from_microsecond(tick)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| tick.to_string());
    let spec = BatchSpec {
        name: Some(format!("{}@{at}", schedule.name)),
        priority: plan.priority,
        max_parallel: plan.max_parallel,
        failure_policy: plan.failure_policy,
        // A schedule grants its batches nothing: outbound HTTP is granted batch by batch.
        allow_http: Vec::new(),
        settings: Vec::new(),
    };
    let tasks = task_specs(state, plan.tasks).await?;
    // Nobody holds a tick's handle: its batch is the admin's to see and steer.
    let mut handle_hash = [0u8; 32];
    getrandom::fill(&mut handle_hash).map_err(|e| {
        ApiError::from(crate::scheduler::Error::Internal(anyhow::anyhow!(
            "random handle: {e}"
        )))
    })?;
    Ok(TickBatch {
        spec,
        handle_hash,
        tasks,
    })
}

/// The compiler the ticker opens tick batches with.
pub fn compiler(state: AppState) -> Compile {
    Arc::new(move |schedule: ScheduleInfo, tick: Micros| {
        let state = state.clone();
        Box::pin(async move {
            compile(&state, &schedule, tick)
                .await
                .map_err(|e| e.detail().to_owned())
        })
    })
}

#[utoipa::path(
    post,
    path = "/schedules",
    operation_id = "create_schedule",
    tag = "schedules",
    request_body = CreateSchedule,
    responses(
        (status = 201, description = "The schedule, with its first tick", body = ScheduleInfo),
        (status = 400, description = "A field is refused (`bad-request` or `invalid`, naming \
            it): a cron expression or time zone it cannot read, a policy it does not know, a \
            plan that does not compile (a module unknown, say).", body = ErrorBody),
        (status = 409, description = "A schedule has this name, or there are 1,000 \
            (`conflict`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn create(
    State(state): State<AppState>,
    _: Admin,
    body: Result<Json<CreateSchedule>, JsonRejection>,
) -> ApiResult<(StatusCode, Json<ScheduleInfo>)> {
    let body = json_body(body)?;
    let spec = ScheduleSpec {
        name: body.name,
        cron: body.cron,
        timezone: body.timezone,
        plan: body.plan,
        overlap: body.overlap,
        catch_up: body.catch_up,
    };
    // The plan must compile now: a mistake is told at once, not at the first tick.
    let probe = ScheduleInfo {
        id: 0,
        name: spec.name.clone(),
        cron: spec.cron.clone(),
        timezone: spec.timezone.clone(),
        plan: spec.plan.clone(),
        overlap: spec.overlap.clone(),
        catch_up: spec.catch_up.clone(),
        paused: false,
        next_due: None,
        last_batch: None,
        missed: 0,
        created_at: 0,
    };
    compile(&state, &probe, 0).await?;
    let created = state.scheduler.schedule_create(spec).await?;
    state.schedules_wake.notify_one();
    Ok((StatusCode::CREATED, Json(created)))
}

/// Every schedule, by name.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleList {
    pub schedules: Vec<ScheduleInfo>,
}

#[utoipa::path(
    get,
    path = "/schedules",
    operation_id = "list_schedules",
    tag = "schedules",
    responses((status = 200, description = "Every schedule", body = ScheduleList)),
    security(("admin_token" = [])),
)]
pub async fn list(State(state): State<AppState>, _: Admin) -> ApiResult<Json<ScheduleList>> {
    Ok(Json(ScheduleList {
        schedules: state.scheduler.schedule_list().await?,
    }))
}

/// A schedule and its last ticks.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleView {
    #[serde(flatten)]
    pub schedule: ScheduleInfo,
    /// The last ticks, newest first.
    pub ticks: Vec<Tick>,
}

#[utoipa::path(
    get,
    path = "/schedules/{name}",
    operation_id = "show_schedule",
    tag = "schedules",
    params(("name" = String, Path, description = "The schedule's name")),
    responses(
        (status = 200, description = "The schedule and its last ticks", body = ScheduleView),
        (status = 404, description = "No schedule has this name (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn show(
    State(state): State<AppState>,
    _: Admin,
    Path(name): Path<String>,
) -> ApiResult<Json<ScheduleView>> {
    let (schedule, ticks) = state.scheduler.schedule_get(name).await?;
    Ok(Json(ScheduleView { schedule, ticks }))
}

#[utoipa::path(
    post,
    path = "/schedules/{name}/pause",
    operation_id = "pause_schedule",
    tag = "schedules",
    params(("name" = String, Path, description = "The schedule's name")),
    responses(
        (status = 200, description = "The schedule, paused", body = ScheduleInfo),
        (status = 404, description = "No schedule has this name (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn pause(
    State(state): State<AppState>,
    _: Admin,
    Path(name): Path<String>,
) -> ApiResult<Json<ScheduleInfo>> {
    Ok(Json(state.scheduler.schedule_pause(name).await?))
}

#[utoipa::path(
    post,
    path = "/schedules/{name}/resume",
    operation_id = "resume_schedule",
    tag = "schedules",
    params(("name" = String, Path, description = "The schedule's name")),
    responses(
        (status = 200, description = "The schedule, waiting for its next tick", body = ScheduleInfo),
        (status = 404, description = "No schedule has this name (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn resume(
    State(state): State<AppState>,
    _: Admin,
    Path(name): Path<String>,
) -> ApiResult<Json<ScheduleInfo>> {
    let resumed = state.scheduler.schedule_resume(name).await?;
    state.schedules_wake.notify_one();
    Ok(Json(resumed))
}

#[utoipa::path(
    post,
    path = "/schedules/{name}/run",
    operation_id = "run_schedule_now",
    tag = "schedules",
    params(("name" = String, Path, description = "The schedule's name")),
    responses(
        (status = 201, description = "The tick out of turn, with the batch it opened", body = Tick),
        (status = 400, description = "The plan no longer compiles (a module removed, say).", body = ErrorBody),
        (status = 404, description = "No schedule has this name (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn run_now(
    State(state): State<AppState>,
    _: Admin,
    Path(name): Path<String>,
) -> ApiResult<(StatusCode, Json<Tick>)> {
    let (schedule, _) = state.scheduler.schedule_get(name).await?;
    let batch = compile(&state, &schedule, crate::store::now_micros()).await?;
    let tick = state.scheduler.schedule_run_now(&schedule, batch).await?;
    Ok((StatusCode::CREATED, Json(tick)))
}

#[utoipa::path(
    delete,
    path = "/schedules/{name}",
    operation_id = "delete_schedule",
    tag = "schedules",
    params(("name" = String, Path, description = "The schedule's name")),
    responses(
        (status = 204, description = "Deleted; the batches it opened stay"),
        (status = 404, description = "No schedule has this name (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn delete(
    State(state): State<AppState>,
    _: Admin,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    state.scheduler.schedule_delete(name).await?;
    Ok(StatusCode::NO_CONTENT)
}
