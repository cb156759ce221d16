//! HTTP errors: every failure is JSON `{"error": ..., "detail": ...}` with the status that
//! says what kind of failure it is, and never an internal detail.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::scheduler::Error;

#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    error: &'static str,
    detail: String,
}

impl ApiError {
    pub fn new(status: StatusCode, error: &'static str, detail: impl Into<String>) -> Self {
        ApiError {
            status,
            error,
            detail: detail.into(),
        }
    }

    /// What went wrong, as the body's `detail` says it.
    pub fn detail(&self) -> &str {
        &self.detail
    }

    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad-request", detail)
    }

    /// A body axum could not take (malformed, too large, wrong content type).
    pub fn rejected(status: StatusCode, detail: String) -> Self {
        let error = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "too-large"
        } else {
            "bad-request"
        };
        Self::new(status, error, detail)
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "send `Authorization: Bearer <admin token or batch handle>`",
        )
    }

    pub fn forbidden() -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "these credentials do not open this resource",
        )
    }
}

impl From<Error> for ApiError {
    fn from(err: Error) -> Self {
        match err {
            Error::Invalid(detail) => Self::new(StatusCode::BAD_REQUEST, "invalid", detail),
            Error::NotFound(detail) => Self::new(StatusCode::NOT_FOUND, "not-found", detail),
            Error::Conflict(detail) => Self::new(StatusCode::CONFLICT, "conflict", detail),
            Error::Forbidden(_) => Self::forbidden(),
            Error::Internal(err) => {
                tracing::error!("internal error: {err:#}");
                Self::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "internal error; see the server log",
                )
            }
        }
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(err: crate::store::StoreError) -> Self {
        Error::from(err).into()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({ "error": self.error, "detail": self.detail })),
        )
            .into_response()
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
