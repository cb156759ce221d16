//! Who a request is: the admin (the server's token), a tenant (one of its tokens), or the
//! holder of one batch's handle; and what it may open, decided from the request's path
//! and headers alone.
//!
//! Every extractor here is taken from the request's head, so a handler that lists one
//! before its body refuses a caller before a byte of the body is read: a wrong handle
//! cannot make the server buffer and parse a large upload.

use axum::extract::{FromRequestParts, Path};
use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use sha2::{Digest as _, Sha256};

use super::AppState;
use super::error::ApiError;
use crate::scheduler::{Access, handle_batch, token_parts};
use crate::store::{BatchId, TaskId, TaskInfo, TenantId};

/// The caller's credentials, taken from `Authorization: Bearer ...`.
pub struct Caller(pub Access);

impl Caller {
    pub fn require_admin(&self) -> Result<(), ApiError> {
        match self.0 {
            Access::Admin => Ok(()),
            Access::Handle(_) | Access::Tenant(_) => Err(ApiError::forbidden()),
        }
    }
}

/// Whose a request is, for what one credential may hold at once (uploads being read,
/// long requests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Holder {
    Admin,
    Batch(BatchId),
    Tenant(TenantId),
}

impl Holder {
    pub fn of(access: &Access) -> Result<Holder, ApiError> {
        Ok(match access {
            Access::Admin => Holder::Admin,
            Access::Handle(handle) => {
                Holder::Batch(handle_batch(handle).ok_or_else(ApiError::unauthorized)?)
            }
            Access::Tenant(tenant) => Holder::Tenant(*tenant),
        })
    }
}

/// The token of `Authorization: Bearer <token>`, if the header has that form.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

/// Whether `token` is `secret`, compared by digests so that the comparison takes the same
/// time whatever the token.
pub fn same_token(token: &str, secret: &str) -> bool {
    Sha256::digest(token.as_bytes()) == Sha256::digest(secret.as_bytes())
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = bearer(&parts.headers).ok_or_else(ApiError::unauthorized)?;
        if same_token(token, &state.admin_token) {
            return Ok(Caller(Access::Admin));
        }
        // Only a token shaped like a handle (`qhb_<batch>_<secret>`) or a tenant's
        // (`qht_<id>_<secret>`) is looked up.
        if handle_batch(token).is_some() {
            return Ok(Caller(Access::Handle(token.to_owned())));
        }
        if token_parts(token).is_some()
            && let Some(tenant) = state.scheduler.token_tenant(token).await?
        {
            return Ok(Caller(Access::Tenant(tenant)));
        }
        Err(ApiError::unauthorized())
    }
}

/// The admin or a tenant: who may open batches. Holds the tenant a batch it opens
/// belongs to (none for the admin).
pub struct Opener(pub Option<TenantId>);

impl FromRequestParts<AppState> for Opener {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        match Caller::from_request_parts(parts, state).await?.0 {
            Access::Admin => Ok(Opener(None)),
            Access::Tenant(tenant) => Ok(Opener(Some(tenant))),
            Access::Handle(_) => Err(ApiError::forbidden()),
        }
    }
}

/// The admin, and no one else.
pub struct Admin;

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        Caller::from_request_parts(parts, state)
            .await?
            .require_admin()?;
        Ok(Admin)
    }
}

/// A caller who may use the batch named in the path (`/batches/{id}/...`).
pub struct BatchCaller {
    pub access: Access,
    pub batch: BatchId,
}

impl FromRequestParts<AppState> for BatchCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let (access, batch) = caller_and_batch(parts, state).await?;
        state.scheduler.authorize(&access, batch).await?;
        Ok(BatchCaller { access, batch })
    }
}

/// A caller who may submit to the batch named in the path: a [`BatchCaller`] whose handle,
/// once checked, is trusted from memory (see [`crate::scheduler::Scheduler::submit`]).
pub struct SubmitCaller {
    pub access: Access,
    pub batch: BatchId,
    /// The tenant whose rules bind the submission: none for the admin.
    pub tenant: Option<TenantId>,
}

impl FromRequestParts<AppState> for SubmitCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let (access, batch) = caller_and_batch(parts, state).await?;
        let tenant = state.scheduler.authorize_submission(&access, batch).await?;
        Ok(SubmitCaller {
            access,
            batch,
            tenant,
        })
    }
}

/// Who calls, and the batch the path names; not yet authorized.
async fn caller_and_batch(
    parts: &mut Parts,
    state: &AppState,
) -> Result<(Access, BatchId), ApiError> {
    let Caller(access) = Caller::from_request_parts(parts, state).await?;
    let Path(batch) = Path::<BatchId>::from_request_parts(parts, state)
        .await
        .map_err(|r| ApiError::rejected(r.status(), r.body_text()))?;
    Ok((access, batch))
}

/// A caller who may use the task named in the path (`/tasks/{id}/...`), with the task.
pub struct TaskCaller {
    pub access: Access,
    pub task: TaskInfo,
}

impl FromRequestParts<AppState> for TaskCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let Caller(access) = Caller::from_request_parts(parts, state).await?;
        let Path(task) = Path::<TaskId>::from_request_parts(parts, state)
            .await
            .map_err(|r| ApiError::rejected(r.status(), r.body_text()))?;
        let task = state.scheduler.task_for(&access, task).await?;
        Ok(TaskCaller { access, task })
    }
}
