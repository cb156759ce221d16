//! `/v1/modules`: add a component (raw body), list and delete modules, remove a name.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::auth::{Admin, Opener};
use super::body::Upload;
use super::doc::Binary;
use super::error::{ApiError, ApiResult, ErrorBody};
use crate::runtime::Digest;
use crate::scheduler::Access;
use crate::store::{ModuleAdded, ModuleInfo};

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AddQuery {
    /// A name tasks may give instead of the digest, added to the module's names; a name
    /// another module had moves to this one (that module keeps its other names).
    #[param(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    /// A label of the caller's, such as a version.
    #[param(min_length = 1, max_length = 200)]
    pub tag: Option<String>,
}

/// Add a component: the raw `.wasm` bytes as the body. It is compiled and checked before
/// it is stored; adding a stored component again adds the name, or gives the new tag.
/// The server checks what no schema can say: that the bytes are a WebAssembly component
/// that compiles and implements the `qhost:task` world (`400 invalid` otherwise).
#[utoipa::path(
    post,
    path = "/modules",
    operation_id = "add_module",
    tag = "modules",
    params(AddQuery),
    request_body(
        content = inline(Binary),
        content_type = "application/wasm",
        description = "A WebAssembly component of the `qhost:task` world, as its bytes \
            (read whatever the `Content-Type`)",
    ),
    responses(
        (status = 201, description = "The module stored, and the module the name moved \
            from, if another had it", body = ModuleAdded),
        (status = 400, description = "The body is not a WebAssembly component of the \
            `qhost:task` world, or does not compile (`invalid`).", body = ErrorBody),
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
) -> ApiResult<(StatusCode, Json<ModuleAdded>)> {
    let body = upload.bytes().await?;
    let info = state
        .scheduler
        .module_add(body.to_vec(), query.name, query.tag)
        .await?;
    Ok((StatusCode::CREATED, Json(info)))
}

/// Every module, oldest first; for a tenant, those it may run.
#[utoipa::path(
    get,
    path = "/modules",
    operation_id = "list_modules",
    tag = "modules",
    responses((status = 200, description = "The modules", body = Vec<ModuleInfo>)),
    security(("admin_token" = []), ("tenant_token" = [])),
)]
pub async fn list(
    State(state): State<AppState>,
    Opener(tenant): Opener,
) -> ApiResult<Json<Vec<ModuleInfo>>> {
    let access = match tenant {
        Some(tenant) => Access::Tenant(tenant),
        None => Access::Admin,
    };
    Ok(Json(state.scheduler.modules_for(&access).await?))
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

/// What a name named before it was removed.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct NameRemoved {
    pub name: String,
    /// The module it named, which keeps its other names.
    pub module: Digest,
}

/// Remove a module's name; the module and its other names stay. A plan or schedule that
/// gives the name fails from then on, saying no module has it.
#[utoipa::path(
    delete,
    path = "/modules/names/{name}",
    operation_id = "remove_module_name",
    tag = "modules",
    params(("name" = String, Path, description = "The name")),
    responses(
        (status = 200, description = "Removed", body = NameRemoved),
        (status = 404, description = "No module has this name (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn remove_name(
    State(state): State<AppState>,
    _: Admin,
    Path(name): Path<String>,
) -> ApiResult<Json<NameRemoved>> {
    let module = state.scheduler.module_unname(name.clone()).await?;
    Ok(Json(NameRemoved { name, module }))
}
