//! The HTTP JSON API under `/v1`, served by `qhost serve`.
//!
//! - [`state`]: what every handler is given ([`AppState`]).
//! - [`auth`]: admin token or batch handle, from `Authorization: Bearer`, and what it may
//!   open, decided before a request's body is read.
//! - [`body`]: permits that bound how many large bodies are read at once.
//! - [`listen`]: accepting connections, with a cap on them and timeouts for slow clients.
//! - [`modules`], [`batches`], [`tasks`]: what callers change; [`keys`]: the
//!   `Idempotency-Key` of openings and submissions.
//! - [`pause`]: pauses and limits changed after the fact; [`redrive`]: failed and
//!   cancelled tasks run again, and bulk actions on the tasks a filter names.
//! - [`observe`]: the execution log, the running-now view, health and metrics.
//! - [`events`]: a batch's task completions as server-sent events.
//! - `openapi.json`: the API described for clients and their generators.
//! - [`error`]: every error as `{"error", "detail"}` with its status.

pub mod auth;
pub mod batches;
pub mod body;
pub mod error;
pub mod events;
pub mod keys;
pub mod listen;
pub mod modules;
pub mod observe;
pub mod pause;
pub mod redrive;
pub mod state;
pub mod tasks;

use std::future::Future;

use axum::extract::DefaultBodyLimit;
use axum::http::header::CONTENT_TYPE;
use axum::routing::{get, post, put};
use axum::{Extension, Router};
use tokio_util::sync::CancellationToken;

pub use state::AppState;

/// Largest component upload.
pub const MAX_MODULE_BYTES: usize = 64 * 1024 * 1024;
/// Largest submission (thousands of tasks with their inputs).
pub const MAX_SUBMIT_BYTES: usize = 64 * 1024 * 1024;
/// Largest body of every other request.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

pub fn router(state: AppState) -> Router {
    let v1 = Router::new()
        .route(
            "/modules",
            post(modules::add)
                .get(modules::list)
                .layer(DefaultBodyLimit::max(MAX_MODULE_BYTES)),
        )
        .route("/modules/{digest}", axum::routing::delete(modules::delete))
        .route(
            "/batches",
            post(batches::open).layer(DefaultBodyLimit::max(MAX_SUBMIT_BYTES)),
        )
        .route("/batches/{id}", get(batches::show).delete(batches::release))
        .route(
            "/batches/{id}/tasks",
            post(batches::submit).layer(DefaultBodyLimit::max(MAX_SUBMIT_BYTES)),
        )
        .route("/batches/{id}/priority", put(batches::set_priority))
        .route("/batches/{id}/seal", post(batches::seal))
        .route("/batches/{id}/cancel", post(batches::cancel))
        .route("/batches/{id}/wait", get(batches::wait))
        .route("/batches/{id}/retry", post(redrive::retry_batch))
        .route("/batches/{id}/pause", post(pause::pause_batch))
        .route("/batches/{id}/resume", post(pause::resume_batch))
        .route("/batches/{id}/max_parallel", put(pause::set_max_parallel))
        .route("/batches/{id}/events", get(events::events))
        .route("/tasks", post(batches::submit_alone))
        .route("/tasks/{id}", get(tasks::show))
        .route("/tasks/{id}/output", get(tasks::output))
        .route("/tasks/{id}/cancel", post(tasks::cancel))
        .route("/tasks/{id}/priority", put(tasks::set_priority))
        .route("/tasks/{id}/retry", post(redrive::retry_task))
        .route("/tasks/retry", post(redrive::retry_where))
        .route("/tasks/cancel", post(redrive::cancel_where))
        .route("/tasks/priority", put(redrive::priority_where))
        .route(
            "/groups/{key}",
            get(tasks::show_group).put(tasks::set_group_limit),
        )
        .route("/groups/{key}/pause", post(pause::pause_group))
        .route("/groups/{key}/resume", post(pause::resume_group))
        .route("/attempts", get(observe::log))
        .route("/running", get(observe::running))
        .route("/nodes", get(observe::nodes))
        .route("/openapi.json", get(openapi));
    Router::new()
        .nest("/v1", v1)
        .route("/healthz", get(observe::healthz))
        .route("/metrics", get(observe::metrics))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .fallback(|| async {
            error::ApiError::new(
                axum::http::StatusCode::NOT_FOUND,
                "not-found",
                "no such endpoint",
            )
        })
        .with_state(state)
}

/// `GET /v1/openapi.json`: the OpenAPI 3 description of this API.
async fn openapi() -> impl axum::response::IntoResponse {
    (
        [(CONTENT_TYPE, "application/json")],
        include_str!("openapi.json"),
    )
}

/// Serves the API on `listener` within `limits` until `shutdown` resolves, then finishes
/// the requests in flight. Requests that would wait (long polls, event streams) see the
/// token passed to handlers cancelled, and answer at once.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    limits: listen::Limits,
    shutdown: impl Future<Output = ()>,
) {
    let stopping = CancellationToken::new();
    let app = router(state).layer(Extension(stopping.clone()));
    listen::serve(listener, app, limits, async move {
        shutdown.await;
        stopping.cancel();
    })
    .await
}
