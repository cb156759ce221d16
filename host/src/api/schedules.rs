//! `/v1/schedules`: schedules that open a batch from a plan at each tick of a cron
//! expression (admin only). The scheduler compiles and checks the plans
//! (`crate::scheduler::schedules`); the node's ticker fires them.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::auth::Admin;
use super::batches::json_body;
use super::error::{ApiResult, ErrorBody};
use crate::scheduler::SchedulePlan;
use crate::schedules::timing::{Overlap, Timing};
use crate::store::{Micros, ScheduleInfo, ScheduleSpec, Tick};

/// `POST /v1/schedules`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSchedule {
    /// 1 to 100 letters, digits, `-`, `_` or `.`.
    #[schema(pattern = "^[A-Za-z0-9._-]{1,100}$")]
    pub name: String,
    /// `MIN HOUR DAY MONTH WEEKDAY`, with seconds first if six fields, or a shorthand
    /// such as `@daily`.
    #[schema(min_length = 1)]
    pub cron: String,
    /// An IANA time zone name; UTC when absent.
    #[serde(default = "utc")]
    #[schema(min_length = 1)]
    pub timezone: String,
    /// The plan each tick opens a batch from.
    #[schema(value_type = SchedulePlan)]
    pub plan: serde_json::Value,
    /// What a tick does while the last tick's batch is open: `skip` (default), `queue` or
    /// `allow`.
    #[serde(default = "skip")]
    #[schema(value_type = Overlap)]
    pub overlap: String,
    /// Which ticks missed while no node ran fire: `none` (default), `last` or `all:N`,
    /// the last N (1 to 100).
    #[serde(default = "none")]
    #[schema(pattern = "^(none|last|all:(100|[1-9][0-9]?))$")]
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

#[utoipa::path(
    post,
    path = "/schedules",
    operation_id = "create_schedule",
    tag = "schedules",
    request_body = CreateSchedule,
    responses(
        (status = 201, description = "The schedule, with its first tick", body = ScheduleInfo, links(
            ("show" = (operation_id = "show_schedule", parameters(("name" = "$response.body#/name")),
                description = "The schedule, its last ticks and its next ones")),
            ("pause" = (operation_id = "pause_schedule", parameters(("name" = "$response.body#/name")))),
            ("resume" = (operation_id = "resume_schedule", parameters(("name" = "$response.body#/name")))),
            ("run" = (operation_id = "run_schedule_now", parameters(("name" = "$response.body#/name")))),
            ("delete" = (operation_id = "delete_schedule", parameters(("name" = "$response.body#/name")))),
        )),
        (status = 400, description = "A field is refused (`bad-request` or `invalid`, naming \
            it): a cron expression or time zone it cannot read; a plan whose tasks a \
            submission's checks refuse (no module has the digest or name given, more than \
            one input, a duration or size it cannot read or beyond the server's maximum, a \
            mount the server does not have); catching up that may open more than 100,000 \
            tasks at once.", body = ErrorBody),
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
    let created = state.scheduler.schedule_create(spec).await?;
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
    /// Its next ticks (up to 5, from `next_due` on), whether or not it is paused.
    pub next_ticks: Vec<Micros>,
}

/// Up to `count` ticks of `schedule` from its next one on.
fn next_ticks(schedule: &ScheduleInfo, count: usize) -> Vec<Micros> {
    let Ok(timing) = Timing::new(&schedule.cron, &schedule.timezone) else {
        return Vec::new();
    };
    std::iter::successors(schedule.next_due, |&at| timing.next_after(at))
        .take(count)
        .collect()
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
    let next_ticks = next_ticks(&schedule, 5);
    Ok(Json(ScheduleView {
        schedule,
        ticks,
        next_ticks,
    }))
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
    Ok(Json(state.scheduler.schedule_resume(name).await?))
}

#[utoipa::path(
    post,
    path = "/schedules/{name}/run",
    operation_id = "run_schedule_now",
    tag = "schedules",
    params(("name" = String, Path, description = "The schedule's name")),
    responses(
        (status = 201, description = "The tick out of turn, with the batch it opened", body = Tick),
        (status = 400, description = "The plan no longer opens a batch (`invalid`): a module \
            removed, a task beyond the server's maxima.", body = ErrorBody),
        (status = 404, description = "No schedule has this name (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn run_now(
    State(state): State<AppState>,
    _: Admin,
    Path(name): Path<String>,
) -> ApiResult<(StatusCode, Json<Tick>)> {
    let tick = state.scheduler.schedule_run_now(name).await?;
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
