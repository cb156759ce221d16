//! HTTP errors: every failure is JSON `{"error": ..., "detail": ...}` with the status that
//! says what kind of failure it is, and never an internal detail.

use axum::Json;
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::scheduler::Error;

/// The body of every failure.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[schema(as = Error)]
pub struct ErrorBody {
    pub error: ErrorCode,
    /// What was wrong and what is allowed, for people.
    pub detail: String,
}

/// What kind of failure, for programs: `bad-request` (a malformed request, or a parameter
/// not of its type), `invalid` (a request the server's checks refuse), `unauthorized`,
/// `forbidden`, `not-found`, `no-output` (a task without output), `method-not-allowed`,
/// `conflict`, `quota` (past one of a batch's quotas or its tenant's open limit), `too-large`,
/// `unsupported-media-type`, `too-many-requests`, `busy`, `not-ready` (the server is
/// starting) or `internal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorCode {
    BadRequest,
    Invalid,
    Unauthorized,
    Forbidden,
    NotFound,
    NoOutput,
    MethodNotAllowed,
    Conflict,
    Quota,
    TooLarge,
    UnsupportedMediaType,
    TooManyRequests,
    Busy,
    NotReady,
    Internal,
}

impl ErrorCode {
    /// Every code, as the document lists them.
    pub const ALL: [ErrorCode; 15] = [
        ErrorCode::BadRequest,
        ErrorCode::Invalid,
        ErrorCode::Unauthorized,
        ErrorCode::Forbidden,
        ErrorCode::NotFound,
        ErrorCode::NoOutput,
        ErrorCode::MethodNotAllowed,
        ErrorCode::Conflict,
        ErrorCode::Quota,
        ErrorCode::TooLarge,
        ErrorCode::UnsupportedMediaType,
        ErrorCode::TooManyRequests,
        ErrorCode::Busy,
        ErrorCode::NotReady,
        ErrorCode::Internal,
    ];
}

#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    error: ErrorCode,
    detail: String,
}

impl ApiError {
    pub fn new(status: StatusCode, error: ErrorCode, detail: impl Into<String>) -> Self {
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
        Self::new(StatusCode::BAD_REQUEST, ErrorCode::BadRequest, detail)
    }

    /// A request axum could not take (a malformed body or parameter, a body too large or
    /// of the wrong content type, a method the path does not answer): its status, with
    /// the error that names it.
    pub fn rejected(status: StatusCode, detail: impl Into<String>) -> Self {
        let error = match status {
            StatusCode::UNAUTHORIZED => ErrorCode::Unauthorized,
            StatusCode::FORBIDDEN => ErrorCode::Forbidden,
            StatusCode::NOT_FOUND => ErrorCode::NotFound,
            StatusCode::METHOD_NOT_ALLOWED => ErrorCode::MethodNotAllowed,
            StatusCode::CONFLICT => ErrorCode::Conflict,
            StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::TooLarge,
            StatusCode::UNSUPPORTED_MEDIA_TYPE => ErrorCode::UnsupportedMediaType,
            StatusCode::UNPROCESSABLE_ENTITY => ErrorCode::Invalid,
            StatusCode::TOO_MANY_REQUESTS => ErrorCode::TooManyRequests,
            StatusCode::SERVICE_UNAVAILABLE => ErrorCode::Busy,
            status if status.is_server_error() => ErrorCode::Internal,
            _ => ErrorCode::BadRequest,
        };
        Self::new(status, error, detail)
    }

    /// `429`: the caller holds as much of the server as one may.
    pub fn too_many(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::TooManyRequests,
            detail,
        )
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            ErrorCode::Unauthorized,
            "send `Authorization: Bearer <admin token, tenant token or batch handle>`",
        )
    }

    pub fn forbidden() -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            ErrorCode::Forbidden,
            "these credentials do not open this resource",
        )
    }
}

impl From<Error> for ApiError {
    fn from(err: Error) -> Self {
        match err {
            Error::BadRequest(detail) => Self::bad_request(detail),
            Error::Invalid(detail) => {
                Self::new(StatusCode::BAD_REQUEST, ErrorCode::Invalid, detail)
            }
            Error::NotFound(detail) => {
                Self::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, detail)
            }
            Error::Conflict(detail) => Self::new(StatusCode::CONFLICT, ErrorCode::Conflict, detail),
            Error::Quota(detail) => Self::new(StatusCode::CONFLICT, ErrorCode::Quota, detail),
            Error::Forbidden(_) => Self::forbidden(),
            Error::Internal(err) => {
                tracing::error!("internal error: {err:#}");
                Self::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    ErrorCode::Internal,
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
        let body = ErrorBody {
            error: self.error,
            detail: self.detail,
        };
        let mut response = (self.status, Json(body)).into_response();
        // Refused for now, not for good: say when to try again.
        if matches!(
            self.status,
            StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
        ) {
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
