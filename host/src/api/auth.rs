//! Who a request is: the admin (the server's token) or the holder of one batch's handle.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use sha2::{Digest as _, Sha256};

use super::AppState;
use super::error::ApiError;
use crate::scheduler::Access;

/// The caller's credentials, taken from `Authorization: Bearer ...`.
pub struct Caller(pub Access);

impl Caller {
    pub fn require_admin(&self) -> Result<(), ApiError> {
        match self.0 {
            Access::Admin => Ok(()),
            Access::Handle(_) => Err(ApiError::forbidden()),
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let header = parts
            .headers
            .get(AUTHORIZATION)
            .ok_or_else(ApiError::unauthorized)?;
        let token = header
            .to_str()
            .ok()
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or_else(ApiError::unauthorized)?;
        // Compare digests, so the comparison takes the same time whatever the token.
        if Sha256::digest(token.as_bytes()) == Sha256::digest(state.admin_token.as_bytes()) {
            return Ok(Caller(Access::Admin));
        }
        if token.starts_with("qhb_") {
            return Ok(Caller(Access::Handle(token.to_owned())));
        }
        Err(ApiError::unauthorized())
    }
}
