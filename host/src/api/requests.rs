//! Each HTTP request as an operator sees it: a log line at `debug` (target `qhost::http`:
//! method, the route's template rather than the path asked for, status, time, and the kind
//! of credential sent, never the credential), and, with traces on, a span (`request`),
//! parented on the caller's `traceparent` header if it sent one. A submission made within
//! that span stores its context with its tasks, so that their attempts join its trace.
//!
//! When neither the line nor the span is wanted, a request passes through untouched.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument as _;

use super::AppState;
use super::auth::{bearer, same_token};
use crate::scheduler::{handle_batch, token_parts};
use crate::telemetry;

/// The log target of the request lines.
pub const LOG_TARGET: &str = "qhost::http";

/// The route a request matched, noted by [`note_route`] inside the router for
/// [`observe`] outside it.
#[derive(Clone, Default)]
struct Route(Arc<OnceLock<MatchedPath>>);

/// Middleware around the whole router: the request's line and span.
pub async fn observe(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let log = tracing::enabled!(target: LOG_TARGET, tracing::Level::DEBUG);
    let trace = telemetry::on();
    if !log && !trace {
        return next.run(request).await;
    }
    let started = Instant::now();
    let method = request.method().clone();
    let credential = credential(&state, request.headers());
    let route = Route::default();
    request.extensions_mut().insert(route.clone());
    let span = if trace {
        let span = tracing::info_span!(
            target: telemetry::TARGET,
            "request",
            otel.name = tracing::field::Empty,
            otel.kind = "server",
            otel.status_code = tracing::field::Empty,
            http.request.method = %method,
            http.route = tracing::field::Empty,
            http.response.status_code = tracing::field::Empty,
            qhost.credential = credential,
        );
        if let Some(parent) = request
            .headers()
            .get(telemetry::context::TRACEPARENT)
            .and_then(|value| value.to_str().ok())
        {
            telemetry::context::set_parent(&span, parent);
        }
        span
    } else {
        tracing::Span::none()
    };
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status().as_u16();
    let matched = route.0.get();
    let template = matched.map_or("(none)", |m| m.as_str());
    if trace {
        if matched.is_none() {
            // No route: the method alone, as the semantic conventions name such a span.
            span.record("otel.name", method.as_str());
        }
        span.record("http.response.status_code", status);
        if status >= 500 {
            span.record("otel.status_code", "ERROR");
        }
    }
    drop(span);
    tracing::debug!(
        target: LOG_TARGET,
        method = %method,
        route = template,
        status,
        ms = crate::telemetry::millis(started.elapsed()),
        credential,
        "request"
    );
    response
}

/// Middleware on the routes: notes the template of the route matched, and names the
/// request's span after it before the handler runs (a span's name is fixed once a
/// submission has read its context).
pub async fn note_route(request: Request, next: Next) -> Response {
    if let (Some(route), Some(matched)) = (
        request.extensions().get::<Route>(),
        request.extensions().get::<MatchedPath>(),
    ) {
        let _ = route.0.set(matched.clone());
        if telemetry::on() {
            let span = tracing::Span::current();
            let name = format!("{} {}", request.method(), matched.as_str());
            span.record("otel.name", name.as_str());
            span.record("http.route", matched.as_str());
        }
    }
    next.run(request).await
}

/// The kind of credential a request carries: `admin`, `handle` or `tenant` (shaped as a
/// batch handle or a tenant's token; whether it opens anything is the handler's to say),
/// `metrics`, `invalid` (a token that is none of these) or `none`.
fn credential(state: &AppState, headers: &HeaderMap) -> &'static str {
    let Some(token) = bearer(headers) else {
        return "none";
    };
    if same_token(token, &state.admin_token) {
        "admin"
    } else if handle_batch(token).is_some() {
        "handle"
    } else if token_parts(token).is_some() {
        "tenant"
    } else if state
        .metrics_token
        .as_deref()
        .is_some_and(|metrics| same_token(token, metrics))
    {
        "metrics"
    } else {
        "invalid"
    }
}
