//! The `Idempotency-Key` header of an opening or a submission, and the
//! `Idempotent-Replayed` header of a repeat's answer (see [`crate::scheduler::IdempotencyKey`]).

use axum::extract::FromRequestParts;
use axum::http::HeaderName;
use axum::http::request::Parts;
use axum::response::AppendHeaders;
use utoipa::IntoParams;

use super::AppState;
use super::error::ApiError;
use crate::scheduler::IdempotencyKey;

/// The header a client sends its key in.
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
/// Set on the answer to a repeat: this is the first request's answer.
pub const REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// The header as the document gives it, on the operations that take one.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)]
pub struct KeyParams {
    /// Done once per key: a repeat asking the same gets the first answer (with
    /// `Idempotent-Replayed: true`); asking anything else under the key is refused (`409
    /// conflict`). 1 to 255 visible ASCII characters; a random one, such as a UUID, is best.
    #[param(
        rename = "Idempotency-Key",
        min_length = 1,
        max_length = 255,
        pattern = "^[!-~]{1,255}$"
    )]
    idempotency_key: Option<String>,
}

/// The request's idempotency key, if it sent one; a malformed one is refused before the
/// body is read.
pub struct KeyHeader(pub Option<IdempotencyKey>);

impl FromRequestParts<AppState> for KeyHeader {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, ApiError> {
        let Some(value) = parts.headers.get(&IDEMPOTENCY_KEY) else {
            return Ok(KeyHeader(None));
        };
        let text = value.to_str().unwrap_or("\u{1}");
        Ok(KeyHeader(Some(IdempotencyKey::parse(text)?)))
    }
}

/// The headers of an answer: `Idempotent-Replayed: true` for a repeat.
pub fn replayed(repeated: bool) -> AppendHeaders<Option<(HeaderName, &'static str)>> {
    AppendHeaders(repeated.then_some((REPLAYED, "true")))
}
