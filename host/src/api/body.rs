//! Request bodies: how many large ones are read at once.
//!
//! An upload route reads its body only after the caller was let in (see [`super::auth`]);
//! a body that may be large then waits for one of a few permits, so that the memory
//! uploads hold at once is bounded whatever the number of callers.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::header::CONTENT_LENGTH;
use axum::http::request::Parts;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::AppState;
use super::error::ApiError;

/// A body announced larger than this, or not announced (chunked), needs a permit.
pub const LARGE_BODY: u64 = 1024 * 1024;
/// Large bodies read at once.
pub const LARGE_BODIES_AT_ONCE: usize = 4;
/// How long a large body waits for a permit before it is refused.
const PERMIT_WAIT: Duration = Duration::from_secs(30);

/// The permits for large bodies.
#[derive(Clone)]
pub struct LargeBodies(Arc<Semaphore>);

impl Default for LargeBodies {
    fn default() -> Self {
        LargeBodies(Arc::new(Semaphore::new(LARGE_BODIES_AT_ONCE)))
    }
}

/// Held while a handler reads and parses its body; `None` for a small body.
pub struct BodyPermit {
    _permit: Option<OwnedSemaphorePermit>,
}

impl FromRequestParts<AppState> for BodyPermit {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let length = parts
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if length.is_some_and(|length| length <= LARGE_BODY) {
            return Ok(BodyPermit { _permit: None });
        }
        let permits = state.large_bodies.0.clone();
        match tokio::time::timeout(PERMIT_WAIT, permits.acquire_owned()).await {
            Ok(Ok(permit)) => Ok(BodyPermit {
                _permit: Some(permit),
            }),
            _ => Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                format!(
                    "{LARGE_BODIES_AT_ONCE} large uploads are being read already; try again shortly"
                ),
            )),
        }
    }
}
