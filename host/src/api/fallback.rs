//! Failures answered outside the handlers, made JSON like every other: a path no route
//! has (404), a method its path does not answer (405, with `Allow`), and any rejection
//! axum answers in plain text before a handler runs.

use axum::body::to_bytes;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::http::header::{ALLOW, CONTENT_LENGTH, CONTENT_TYPE};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// Longest plain-text rejection kept as a failure's detail.
const MAX_DETAIL: usize = 4096;

/// The answer to a path no route has.
pub async fn not_found(request: Request) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        super::error::ErrorCode::NotFound,
        format!(
            "no endpoint answers {} {}; GET /v1/openapi.json lists them",
            request.method(),
            request.uri().path()
        ),
    )
}

/// Middleware: a failure that is not JSON becomes `{"error", "detail"}` with its status,
/// its detail the text axum gave, and its other headers (such as `Allow`) kept.
pub async fn json_failures(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(&response) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let detail = if status == StatusCode::METHOD_NOT_ALLOWED {
        let allowed = parts
            .headers
            .get(ALLOW)
            .and_then(|allow| allow.to_str().ok())
            .unwrap_or_default();
        format!("{path} does not answer {method}; it answers {allowed}")
    } else {
        let text = to_bytes(body, MAX_DETAIL).await.unwrap_or_default();
        let text = String::from_utf8_lossy(&text).trim().to_owned();
        if text.is_empty() {
            status.canonical_reason().unwrap_or("failed").to_owned()
        } else {
            text
        }
    };
    let (json, body) = ApiError::rejected(status, detail)
        .into_response()
        .into_parts();
    parts.headers.remove(CONTENT_LENGTH);
    if let Some(content_type) = json.headers.get(CONTENT_TYPE) {
        parts.headers.insert(CONTENT_TYPE, content_type.clone());
    }
    Response::from_parts(parts, body)
}

fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"))
}
