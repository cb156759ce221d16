//! `/v1/modules`: add a component (raw body), list, show and delete modules.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::AppState;
use super::auth::Admin;
use super::body::BodyPermit;
use super::error::{ApiError, ApiResult};
use crate::runtime::Digest;
use crate::store::ModuleInfo;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddQuery {
    pub name: Option<String>,
    pub tag: Option<String>,
}

pub async fn add(
    State(state): State<AppState>,
    _: Admin,
    _permit: BodyPermit,
    Query(query): Query<AddQuery>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<(StatusCode, Json<ModuleInfo>)> {
    let body = body.map_err(|r| ApiError::rejected(r.status(), r.body_text()))?;
    let info = state
        .scheduler
        .module_add(body.to_vec(), query.name, query.tag)
        .await?;
    Ok((StatusCode::CREATED, Json(info)))
}

pub async fn list(State(state): State<AppState>, _: Admin) -> ApiResult<Json<Vec<ModuleInfo>>> {
    let modules = state.scheduler.module_list().await?;
    Ok(Json(modules))
}

pub async fn delete(
    State(state): State<AppState>,
    _: Admin,
    Path(digest): Path<String>,
) -> ApiResult<StatusCode> {
    let digest = Digest::from_hex(&digest).map_err(ApiError::bad_request)?;
    state.scheduler.module_delete(digest).await?;
    Ok(StatusCode::NO_CONTENT)
}
