//! `/v1/tenants`: tenants and their tokens (admin only). A token is shown once, in the
//! answer that makes it; revoked, it opens nothing on any node from the next request.

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
use crate::scheduler::NewToken;
use crate::store::{TenantInfo, TokenInfo};

/// `POST /v1/tenants`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddTenant {
    /// 1 to 64 of `a-z`, `0-9`, `-` and `_`, starting with a letter or digit.
    #[schema(pattern = "^[a-z0-9][a-z0-9_-]{0,63}$")]
    pub name: String,
}

#[utoipa::path(
    post,
    path = "/tenants",
    operation_id = "add_tenant",
    tag = "tenants",
    request_body = AddTenant,
    responses(
        (status = 201, description = "The tenant, with no token yet", body = TenantInfo),
        (status = 400, description = "A name it does not take (`invalid`).", body = ErrorBody),
        (status = 409, description = "A tenant has this name (`conflict`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn add(
    State(state): State<AppState>,
    _: Admin,
    body: Result<Json<AddTenant>, JsonRejection>,
) -> ApiResult<(StatusCode, Json<TenantInfo>)> {
    let body = json_body(body)?;
    let added = state.scheduler.tenant_add(body.name).await?;
    Ok((StatusCode::CREATED, Json(added)))
}

/// Every tenant, by name.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TenantList {
    pub tenants: Vec<TenantInfo>,
}

#[utoipa::path(
    get,
    path = "/tenants",
    operation_id = "list_tenants",
    tag = "tenants",
    responses((status = 200, description = "Every tenant", body = TenantList)),
    security(("admin_token" = [])),
)]
pub async fn list(State(state): State<AppState>, _: Admin) -> ApiResult<Json<TenantList>> {
    Ok(Json(TenantList {
        tenants: state.scheduler.tenant_list().await?,
    }))
}

/// Make a token for a tenant. The answer is the only time the token is shown.
#[utoipa::path(
    post,
    path = "/tenants/{name}/tokens",
    operation_id = "make_tenant_token",
    tag = "tenants",
    params(("name" = String, Path, description = "The tenant's name")),
    responses(
        (status = 201, description = "The token, shown this once", body = NewToken),
        (status = 404, description = "No tenant has this name (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn make_token(
    State(state): State<AppState>,
    _: Admin,
    Path(name): Path<String>,
) -> ApiResult<(StatusCode, Json<NewToken>)> {
    let token = state.scheduler.token_make(name).await?;
    Ok((StatusCode::CREATED, Json(token)))
}

/// A tenant's tokens, without their secrets.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TokenList {
    pub tokens: Vec<TokenInfo>,
}

#[utoipa::path(
    get,
    path = "/tenants/{name}/tokens",
    operation_id = "list_tenant_tokens",
    tag = "tenants",
    params(("name" = String, Path, description = "The tenant's name")),
    responses(
        (status = 200, description = "Its tokens, oldest first, revoked ones too", body = TokenList),
        (status = 404, description = "No tenant has this name (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn list_tokens(
    State(state): State<AppState>,
    _: Admin,
    Path(name): Path<String>,
) -> ApiResult<Json<TokenList>> {
    Ok(Json(TokenList {
        tokens: state.scheduler.token_list(name).await?,
    }))
}

/// Revoke a tenant's token: from the next request on, it opens nothing. Its batches stay,
/// with their handles.
#[utoipa::path(
    delete,
    path = "/tenants/{name}/tokens/{id}",
    operation_id = "revoke_tenant_token",
    tag = "tenants",
    params(
        ("name" = String, Path, description = "The tenant's name"),
        ("id" = i64, Path, description = "The token's id (`qht_<id>_...`)"),
    ),
    responses(
        (status = 200, description = "The token, revoked", body = TokenInfo),
        (status = 404, description = "No tenant has this name, or no token of it this id \
            (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn revoke_token(
    State(state): State<AppState>,
    _: Admin,
    Path((name, id)): Path<(String, i64)>,
) -> ApiResult<Json<TokenInfo>> {
    Ok(Json(state.scheduler.token_revoke(name, id).await?))
}
