//! Pauses and limits changed after the fact: `POST /v1/groups/{key}/pause|resume`,
//! `POST /v1/batches/{id}/pause|resume`, `PUT /v1/batches/{id}/max_parallel`. Each answers
//! with the group or batch as it is then.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use serde::Deserialize;

use super::AppState;
use super::auth::{Admin, BatchCaller};
use super::batches::json_body;
use super::error::ApiResult;
use crate::store::{BatchInfo, GroupInfo};

pub async fn pause_group(
    State(state): State<AppState>,
    _: Admin,
    Path(key): Path<String>,
) -> ApiResult<Json<GroupInfo>> {
    Ok(Json(state.scheduler.group_set_paused(key, true).await?))
}

pub async fn resume_group(
    State(state): State<AppState>,
    _: Admin,
    Path(key): Path<String>,
) -> ApiResult<Json<GroupInfo>> {
    Ok(Json(state.scheduler.group_set_paused(key, false).await?))
}

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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetMaxParallel {
    /// At most this many of the batch's tasks run at once; 0 holds them all; `null` (or
    /// absent): no limit.
    pub max_parallel: Option<u32>,
}

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
