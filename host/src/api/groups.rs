//! `GET /v1/groups`: every group with its limit, idle ones too, in key order and paged; a
//! batch handle sees the groups its batch's tasks name.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::auth::Caller;
use super::error::{ApiError, ApiResult, ErrorBody};
use crate::scheduler::Access;
use crate::store::GroupRow;

/// Groups in a page when the query names no `limit`.
const DEFAULT_GROUPS: usize = 100;
/// The most groups in a page.
const MAX_GROUPS: usize = 500;

/// The query of `GET /v1/groups`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct GroupListQuery {
    /// The most groups in a page; none: 100.
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// A page of groups, in key order.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct GroupListPage {
    pub groups: Vec<GroupRow>,
    /// Pass as `cursor` for the next page; none at the end.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// Groups with their limits, idle ones too, in key order. A batch handle lists the groups
/// its batch's tasks name.
#[utoipa::path(
    get,
    path = "/groups",
    operation_id = "list_groups",
    tag = "tasks",
    params(GroupListQuery),
    responses(
        (status = 200, description = "A page of groups", body = GroupListPage),
        (status = 400, description = "A limit it does not take, or an unknown parameter \
            (`bad-request`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("batch_handle" = [])),
)]
pub async fn list_groups(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<GroupListQuery>, QueryRejection>,
) -> ApiResult<Json<GroupListPage>> {
    if let Access::Tenant(_) = caller.0 {
        // Groups are the server's; a tenant's own namespace of them is to come.
        return Err(ApiError::forbidden());
    }
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let limit = match query.limit.unwrap_or(DEFAULT_GROUPS) {
        limit @ 1..=MAX_GROUPS => limit,
        _ => {
            return Err(ApiError::bad_request(format!(
                "parameter `limit`: 1 to {MAX_GROUPS}"
            )));
        }
    };
    let after = query.cursor.unwrap_or_default();
    // One more than the page tells whether another follows.
    let mut groups = state
        .scheduler
        .group_list(&caller.0, after, limit + 1)
        .await?;
    let next_cursor = if groups.len() > limit {
        groups.truncate(limit);
        groups.last().map(|g| g.key.clone())
    } else {
        None
    };
    Ok(Json(GroupListPage {
        groups,
        next_cursor,
    }))
}
