//! `/v1/modules`: add a component (raw body), list, show and delete modules.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::IntoParams;

use super::AppState;
use super::auth::Admin;
use super::body::Upload;
use super::doc::Binary;
use super::error::{ApiError, ApiResult, ErrorBody};
use crate::runtime::Digest;
use crate::store::ModuleInfo;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AddQuery {
    /// A name tasks may give instead of the digest (the module added last under a name
    /// is the one it names).
    #[param(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    /// A label of the caller's, such as a version.
    #[param(min_length = 1, max_length = 200)]
    pub tag: Option<String>,
}

/// Add a component: the raw `.wasm` bytes as the body. It is compiled and checked before
/// it is stored; adding a stored component again gives it the new name or tag.
#[utoipa::path(
    post,
    path = "/modules",
    operation_id = "add_module",
    tag = "modules",
    params(AddQuery),
    request_body(
        content = inline(Binary),
        content_type = "application/octet-stream",
        description = "A WebAssembly component of the `qhost:task` world",
    ),
    responses(
        (status = 201, description = "The module stored", body = ModuleInfo),
        (status = 400, description = "The body is not a component of the `qhost:task` world, \
            or does not compile (`invalid`).", body = ErrorBody),
        (status = 503, description = "Four large uploads are being read already; try again \
            shortly (`busy`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn add(
    State(state): State<AppState>,
    _: Admin,
    Query(query): Query<AddQuery>,
    mut upload: Upload,
) -> ApiResult<(StatusCode, Json<ModuleInfo>)> {
    let body = upload.bytes().await?;
    let info = state
        .scheduler
        .module_add(body.to_vec(), query.name, query.tag)
        .await?;
    Ok((StatusCode::CREATED, Json(info)))
}

/// Every module, oldest first.
#[utoipa::path(
    get,
    path = "/modules",
    operation_id = "list_modules",
    tag = "modules",
    responses((status = 200, description = "The modules", body = Vec<ModuleInfo>)),
    security(("admin_token" = [])),
)]
pub async fn list(State(state): State<AppState>, _: Admin) -> ApiResult<Json<Vec<ModuleInfo>>> {
    let modules = state.scheduler.module_list().await?;
    Ok(Json(modules))
}

/// Delete a module that no task which has not ended uses.
#[utoipa::path(
    delete,
    path = "/modules/{digest}",
    operation_id = "delete_module",
    tag = "modules",
    params(("digest" = Digest, Path, description = "The module's digest")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No module has this digest (`not-found`).", body = ErrorBody),
        (status = 409, description = "Tasks that have not ended use it (`conflict`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn delete(
    State(state): State<AppState>,
    _: Admin,
    Path(digest): Path<String>,
) -> ApiResult<StatusCode> {
    let digest = Digest::from_hex(&digest).map_err(ApiError::bad_request)?;
    state.scheduler.module_delete(digest).await?;
    Ok(StatusCode::NO_CONTENT)
}
