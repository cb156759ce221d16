//! `/v1/usage` and `/v1/batches/{id}/usage`: what tenants and batches have used, as the
//! sandbox measured each run (slot time, CPU time, memory over time).

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::auth::{BatchCaller, Caller};
use super::error::{ApiError, ApiResult, ErrorBody};
use crate::scheduler::Access;
use crate::store::{BatchUsage, TenantUsage};

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UsageList {
    /// Every tenant for the admin; a tenant's own for its token.
    pub tenants: Vec<TenantUsage>,
}

/// What tenants have used since they were added, and what they hold now: the admin sees
/// every tenant, a tenant's token its own. A batch's handle reads its batch's usage
/// (`/v1/batches/{id}/usage`).
#[utoipa::path(
    get,
    path = "/usage",
    operation_id = "show_usage",
    tag = "tenants",
    responses(
        (status = 200, description = "Tenants' usage", body = UsageList),
        (status = 403, description = "A batch handle (`forbidden`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = [])),
)]
pub async fn show(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<UsageList>> {
    let tenants = match caller.0 {
        Access::Admin => state
            .scheduler
            .tenant_list()
            .await?
            .into_iter()
            .map(TenantUsage::from)
            .collect(),
        Access::Tenant(tenant) => vec![state.scheduler.tenant_usage(tenant).await?],
        Access::Handle(_) => return Err(ApiError::forbidden()),
    };
    Ok(Json(UsageList { tenants }))
}

/// What the batch's ended attempts have used, summed over its execution log.
#[utoipa::path(
    get,
    path = "/batches/{id}/usage",
    operation_id = "show_batch_usage",
    tag = "batches",
    params(("id" = i64, Path, description = "The batch's id")),
    responses(
        (status = 200, description = "The batch's usage", body = BatchUsage),
        (status = 404, description = "No batch has this id (`not-found`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("tenant_token" = []), ("batch_handle" = [])),
)]
pub async fn show_batch(
    State(state): State<AppState>,
    caller: BatchCaller,
) -> ApiResult<Json<BatchUsage>> {
    Ok(Json(state.scheduler.batch_usage(caller.batch).await?))
}
