//! `/v1/tenants`: tenants, what their batches may do, and their tokens (admin only). A
//! token is shown once, in the answer that makes it; revoked, it opens nothing on any node
//! from the next request on.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::auth::Admin;
use super::batches::{json_body, object_body};
use super::error::{ApiError, ApiResult, ErrorBody};
use crate::runtime::origin::{self, AllowedOrigin};
use crate::scheduler::NewToken;
use crate::store::{Budget, TenantChange, TenantId, TenantInfo, TenantMaxima, TokenInfo};

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

/// `PATCH /v1/tenants/{name}`: a field left out stays.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetTenant {
    /// The highest priority its batches and tasks may be given, by its token or their
    /// handles; `null`: the server's (`--tenant-max-priority`).
    #[serde(default, deserialize_with = "crate::whole::clearable")]
    #[schema(value_type = Option<i32>)]
    pub max_priority: Option<Option<i32>>,
    /// Groups outside its namespace (`<tenant>/...`) its tasks may name, all of them (at
    /// most 100).
    #[schema(max_items = 100)]
    pub shared_groups: Option<Vec<GroupKey>>,
    /// The modules its tasks may run, by name or digest (at most 100); `null`: every
    /// module.
    #[serde(default, deserialize_with = "super::tasks::present")]
    #[schema(max_items = 100)]
    pub modules: Option<Option<Vec<ModuleRef>>>,
    /// The origins (`SCHEME://HOST[:PORT|:*]`) its batches may be granted and post
    /// webhooks to, within the operator's `--allow-http` (at most 100); `null`: the
    /// operator's.
    #[serde(default, deserialize_with = "super::tasks::present")]
    #[schema(max_items = 100)]
    pub allow_http: Option<Option<Vec<String>>>,
    /// The most of its tasks claimed at once, across its batches and the nodes (1 to
    /// 1000000); `null`: no limit. It reaches every task not yet claimed.
    #[serde(default, deserialize_with = "crate::whole::clearable")]
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 1000000)]
    pub max_running: Option<Option<u32>>,
    /// The most of its tasks open at once (submitted, not ended: waiting, ready, reserved
    /// or running), across its batches (1 to 1000000000); `null`: no limit. A submission
    /// or re-drive past it is refused whole (`quota`); the tasks open already stay.
    #[serde(default, deserialize_with = "crate::whole::clearable")]
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 1000000000)]
    pub max_open: Option<Option<u32>>,
    /// The most its tasks may ask of `memory`, `timeout`, `http_requests`, `http_sent`,
    /// `http_received` and `http_timeout`, each as a task asks it and within the server's
    /// maxima; a task that asks none of one gets the server's default, or this where it is
    /// lower. All of them: one left out is the server's maximum again (`{}`: all).
    #[serde(default, deserialize_with = "maxima_object")]
    pub max_limits: Option<TenantMaxima>,
    /// What its attempts may use per period, as the sandbox measures it: CPU time,
    /// memory-time, HTTP body bytes, or several:
    /// `{"period": "1h", "cpu": "10s", "memory_mib_seconds": 36000, "http_bytes": 100000000}`;
    /// `null`: no budget. Once a window's use of one reaches it, the task that crossed it
    /// ends with outcome `budget` and the tenant's tasks not started wait for the next
    /// window.
    #[serde(default, deserialize_with = "super::tasks::present")]
    pub budget: Option<Option<Budget>>,
    /// Its share of the slots under saturation, against the other tenants' weights (1 to
    /// 10000): its attempts get slot time in that proportion, whatever the number and
    /// size of its batches. It reaches the next claim.
    #[serde(default, deserialize_with = "crate::whole::option")]
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 10000)]
    pub weight: Option<u32>,
}

/// `max_limits`, read from an object alone: serde would take a struct from an array too.
fn maxima_object<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<TenantMaxima>, D::Error> {
    let Some(object) =
        Option::<serde_json::Map<String, serde_json::Value>>::deserialize(deserializer)?
    else {
        return Ok(None);
    };
    serde_json::from_value(serde_json::Value::Object(object))
        .map(Some)
        .map_err(serde::de::Error::custom)
}

/// The origins a tenant's batches may reach, when the admin narrowed them.
pub(super) struct TenantOrigins {
    name: String,
    origins: Vec<AllowedOrigin>,
}

impl TenantOrigins {
    /// `tenant`'s narrowed origins; none for the admin, or a tenant with the operator's.
    pub(super) async fn of(state: &AppState, tenant: Option<TenantId>) -> ApiResult<Option<Self>> {
        let Some(tenant) = tenant else {
            return Ok(None);
        };
        let rules = state.scheduler.tenant_rules(tenant).await?;
        Ok(rules.allow_http.map(|origins| TenantOrigins {
            name: rules.name,
            origins: origins.iter().filter_map(|o| o.parse().ok()).collect(),
        }))
    }

    /// Refuses the first of `asked` outside the tenant's origins, naming `field`.
    pub(super) fn check(&self, field: &str, asked: &[AllowedOrigin]) -> ApiResult<()> {
        match asked
            .iter()
            .find(|a| !self.origins.iter().any(|o| o.covers(a)))
        {
            None => Ok(()),
            Some(outside) => Err(ApiError::bad_request(format!(
                "field `{field}`: origin `{outside}` is not among those tenant {name}'s batches \
                 may reach; the admin adds one with `qhost tenant set {name} --allow-http \
                 ORIGIN`",
                name = self.name
            ))),
        }
    }
}

/// A module's name or digest.
#[derive(Debug, Deserialize)]
pub struct ModuleRef(pub String);

impl utoipa::PartialSchema for ModuleRef {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .min_length(Some(1))
            .max_length(Some(crate::scheduler::MAX_NAME))
            .into()
    }
}

impl ToSchema for ModuleRef {}

/// A group key, as tasks name it in `group`.
#[derive(Debug, Deserialize)]
pub struct GroupKey(pub String);

impl utoipa::PartialSchema for GroupKey {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .min_length(Some(1))
            .max_length(Some(crate::scheduler::MAX_GROUP_KEY))
            .into()
    }
}

impl ToSchema for GroupKey {}

/// Change what a tenant's batches may do. A ceiling holds from the next request on, and
/// reaches the work not started: its batches and their tasks above it drop to it.
#[utoipa::path(
    patch,
    path = "/tenants/{name}",
    operation_id = "set_tenant",
    tag = "tenants",
    params(("name" = String, Path, description = "The tenant's name")),
    request_body = SetTenant,
    responses(
        (status = 200, description = "The tenant", body = TenantInfo),
        (status = 400, description = "The server's checks refuse a field (`bad-request` or \
            `invalid`, naming it): an `allow_http` origin it cannot read or outside the \
            server's `--allow-http`.", body = ErrorBody),
        (status = 404, description = "No tenant has this name (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = [])),
)]
pub async fn set(
    State(state): State<AppState>,
    _: Admin,
    Path(name): Path<String>,
    body: Result<Json<serde_json::Map<String, serde_json::Value>>, JsonRejection>,
) -> ApiResult<Json<TenantInfo>> {
    let body: SetTenant = object_body(body)?;
    let change = TenantChange {
        max_priority: body.max_priority,
        shared_groups: body
            .shared_groups
            .map(|groups| groups.into_iter().map(|g| g.0).collect()),
        modules: body
            .modules
            .map(|modules| modules.map(|m| m.into_iter().map(|m| m.0).collect())),
        allow_http: match body.allow_http {
            Some(Some(origins)) => Some(Some(within_operator(&state, &origins)?)),
            other => other,
        },
        max_running: body.max_running,
        max_open: body.max_open,
        max_limits: body.max_limits,
        budget: body.budget,
        weight: body.weight,
        ceiling: None,
    };
    Ok(Json(state.scheduler.tenant_set(name, change).await?))
}

/// `origins` as the operator's `--allow-http` covers them, each written the one way.
fn within_operator(state: &AppState, origins: &[String]) -> ApiResult<Vec<String>> {
    if origins.len() > crate::store::MAX_SHARED_GROUPS {
        return Err(ApiError::bad_request(format!(
            "field `allow_http`: {} origins, more than the {} allowed",
            origins.len(),
            crate::store::MAX_SHARED_GROUPS
        )));
    }
    let operator = &state.scheduler.runtime.config().allow_http;
    let granted = origin::check_grant(operator, origins)
        .map_err(|e| ApiError::bad_request(format!("field `allow_http`: {e}")))?;
    Ok(granted.iter().map(ToString::to_string).collect())
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
