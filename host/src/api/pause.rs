//! Pauses and limits changed after the fact: `POST /v1/groups/{key}/pause|resume`,
//! `POST /v1/batches/{id}/pause|resume`, `PUT /v1/batches/{id}/max_parallel`. Each answers
//! with the group or batch as it is then.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use serde::Deserialize;
use utoipa::ToSchema;

use super::AppState;
use super::auth::{Admin, BatchCaller};
use super::batches::json_body;
use super::error::{ApiResult, ErrorBody};
use super::whole;
use crate::store::{BatchInfo, GroupInfo};

/// Hold a group's tasks that have not started, across batches (those running finish).
#[utoipa::path(
    post,
    path = "/groups/{key}/pause",
    operation_id = "pause_group",
    tag = "tasks",
    params(("key" = String, Path, description = "The group's key", min_length = 1, max_length = 200)),
    responses(
        (status = 200, description = "The group", body = GroupInfo),
        (status = 400, description = "The server's checks refuse the key (`invalid`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn pause_group(
    State(state): State<AppState>,
    _: Admin,
    Path(key): Path<String>,
) -> ApiResult<Json<GroupInfo>> {
    Ok(Json(state.scheduler.group_set_paused(key, true).await?))
}

/// Let a paused group's tasks run again, in their order.
#[utoipa::path(
    post,
    path = "/groups/{key}/resume",
    operation_id = "resume_group",
    tag = "tasks",
    params(("key" = String, Path, description = "The group's key", min_length = 1, max_length = 200)),
    responses(
        (status = 200, description = "The group", body = GroupInfo),
        (status = 400, description = "The server's checks refuse the key (`invalid`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn resume_group(
    State(state): State<AppState>,
    _: Admin,
    Path(key): Path<String>,
) -> ApiResult<Json<GroupInfo>> {
    Ok(Json(state.scheduler.group_set_paused(key, false).await?))
}

/// Hold a batch's tasks that have not started (those running finish).
#[utoipa::path(
    post,
    path = "/batches/{id}/pause",
    operation_id = "pause_batch",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch's id")),
    responses(
        (status = 200, description = "The batch", body = BatchInfo),
        (status = 404, description = "No batch has this id (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn pause_batch(
    State(state): State<AppState>,
    caller: BatchCaller,
) -> ApiResult<Json<BatchInfo>> {
    let batch = state
        .scheduler
        .batch_set_paused(&caller.access, caller.batch, true)
        .await?;
    Ok(Json(batch))
}

/// Let a paused batch's tasks run again, in their order.
#[utoipa::path(
    post,
    path = "/batches/{id}/resume",
    operation_id = "resume_batch",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch's id")),
    responses(
        (status = 200, description = "The batch", body = BatchInfo),
        (status = 404, description = "No batch has this id (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn resume_batch(
    State(state): State<AppState>,
    caller: BatchCaller,
) -> ApiResult<Json<BatchInfo>> {
    let batch = state
        .scheduler
        .batch_set_paused(&caller.access, caller.batch, false)
        .await?;
    Ok(Json(batch))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetMaxParallel {
    /// At most this many of the batch's tasks run at once; 0 holds them all; `null` (or
    /// absent): no limit.
    #[serde(default, deserialize_with = "whole::option")]
    #[schema(format = Int64, minimum = 0, maximum = 4294967295_u64)]
    pub max_parallel: Option<u32>,
}

/// Change how many of a batch's tasks run at once.
#[utoipa::path(
    put,
    path = "/batches/{id}/max_parallel",
    operation_id = "set_batch_max_parallel",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch's id")),
    request_body = SetMaxParallel,
    responses(
        (status = 200, description = "The batch", body = BatchInfo),
        (status = 404, description = "No batch has this id (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn set_max_parallel(
    State(state): State<AppState>,
    caller: BatchCaller,
    body: Result<Json<SetMaxParallel>, JsonRejection>,
) -> ApiResult<Json<BatchInfo>> {
    let body = json_body(body)?;
    let batch = state
        .scheduler
        .batch_set_max_parallel(&caller.access, caller.batch, body.max_parallel)
        .await?;
    Ok(Json(batch))
}
