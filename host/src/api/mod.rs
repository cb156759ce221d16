//! The HTTP JSON API under `/v1`, served by `qhost serve`.
//!
//! - [`state`]: what every handler is given ([`AppState`]).
//! - [`auth`]: admin token, tenant token or batch handle, from `Authorization: Bearer`,
//!   and what it may open, decided before a request's body is read; [`tenants`]: tenants
//!   and their tokens;
//!   [`usage`]: what tenants and batches have used.
//! - [`body`]: upload bodies, and the permits that bound how many large ones are read at
//!   once.
//! - [`listen`]: accepting connections, with caps on them in all and per address, room
//!   kept for the admin and health probes; [`ready`]: what the listener answers while the
//!   server starts, and readiness; [`slow`]: how slowly a client may send a body
//!   or read an answer; [`long_polls`]: how many waits and event streams a credential, and
//!   batch handles together, may hold.
//! - [`modules`], [`batches`], [`tasks`]: what callers change.
//! - [`lists`]: batches and tasks listed, filtered and paged; [`attempt_page`]: attempts
//!   in lists and views, cut short and bounded in bytes.
//! - [`schedules`]: schedules that open batches on a cron expression; [`groups`]: the
//!   groups listed with their limits.
//! - [`keys`]: the `Idempotency-Key` of openings and submissions.
//! - [`settings`]: the settings granted to a batch, secrets sealed; [`webhook`]: a
//!   batch's webhook, checked against the allow-list, its secret sealed.
//! - [`pause`]: pauses and limits changed after the fact; [`redrive`]: failed and
//!   cancelled tasks run again, and bulk actions on the tasks a filter names.
//! - [`observe`]: the execution log, the running-now view, the nodes, health, readiness;
//!   [`metrics`]: Prometheus metrics, with [`process_metrics`] (memory, files, threads);
//!   [`status`]: the whole queue at a glance;
//!   [`history`]: the queue over the last hour, sampled in memory; [`backup`]: a
//!   consistent copy of a running node's SQLite store.
//! - [`events`]: a batch's task completions as server-sent events.
//! - [`error`]: every error as `{"error", "detail"}` with its status; [`fallback`]: the
//!   same for unknown routes, wrong methods and what axum rejects before a handler runs.
//! - [`dashboard`]: the web dashboard at `/`, files compiled into the binary.
//! - [`requests`]: each request's log line (at `debug`) and, with traces on, its span.
//! - [`doc`]: the OpenAPI document's frame. The document itself is generated from the
//!   handlers' `#[utoipa::path]` annotations and the wire types' `ToSchema`, by the same
//!   [`routes`] that route requests: a route added there is documented, or does not
//!   compile. `GET /v1/openapi.json` serves it.

pub mod attempt_page;
pub mod auth;
pub mod backup;
pub mod batches;
pub mod body;
pub mod dashboard;
pub mod doc;
pub mod error;
pub mod events;
pub mod fallback;
pub mod groups;
pub mod history;
pub mod keys;
pub mod listen;
pub mod lists;
pub mod long_polls;
pub mod metrics;
pub mod modules;
pub mod observe;
pub mod pause;
pub mod process_metrics;
pub mod ready;
pub mod redrive;
pub mod requests;
pub mod schedules;
pub mod settings;
pub mod slow;
pub mod state;
pub mod status;
pub mod tasks;
pub mod tenants;
pub mod usage;
pub mod webhook;
pub use crate::whole;

use std::future::Future;
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::{Extension, Router};
use tokio_util::sync::CancellationToken;
use utoipa::openapi::OpenApi;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt as _};
use utoipa_axum::routes;

pub use state::AppState;

/// Largest component upload.
pub const MAX_MODULE_BYTES: usize = 64 * 1024 * 1024;
/// Largest submission (thousands of tasks with their inputs).
pub const MAX_SUBMIT_BYTES: usize = 64 * 1024 * 1024;
/// Largest body of every other request.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

pub fn router(state: AppState) -> Router {
    let (router, document) = routes().split_for_parts();
    let document = Document(
        doc::finish(document)
            .to_json()
            .expect("the OpenAPI document serializes")
            .into(),
    );
    let observe = axum::middleware::from_fn_with_state(state.clone(), requests::observe);
    let api = router
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(Extension(document))
        .route_layer(axum::middleware::from_fn(requests::note_route))
        .fallback(fallback::not_found)
        .with_state(state);
    // Around the whole router, not each route: a 405 gets its `Allow` header outside the
    // route's own layers.
    Router::new()
        .merge(dashboard::routes())
        .route_layer(axum::middleware::from_fn(requests::note_route))
        .fallback_service(api)
        .layer(axum::middleware::from_fn(fallback::json_failures))
        .layer(observe)
}

/// The OpenAPI document of this API, as `GET /v1/openapi.json` serves it.
pub fn document() -> OpenApi {
    doc::finish(routes().into_openapi())
}

/// Every route, each with its operation in the document.
fn routes() -> OpenApiRouter<AppState> {
    let v1 = OpenApiRouter::new()
        .routes(routes!(modules::add, modules::list).layer(DefaultBodyLimit::max(MAX_MODULE_BYTES)))
        .routes(routes!(modules::delete))
        .routes(routes!(modules::remove_name))
        .routes(
            routes!(batches::open, lists::list_batches)
                .layer(DefaultBodyLimit::max(MAX_SUBMIT_BYTES)),
        )
        .routes(routes!(batches::show, batches::release))
        .routes(routes!(batches::graph))
        .routes(routes!(batches::submit).layer(DefaultBodyLimit::max(MAX_SUBMIT_BYTES)))
        .routes(routes!(batches::set_priority))
        .routes(routes!(batches::seal))
        .routes(routes!(batches::set_quotas))
        .routes(routes!(batches::cancel))
        .routes(routes!(batches::wait))
        .routes(routes!(events::events))
        .routes(routes!(batches::submit_alone, lists::list_tasks))
        .routes(routes!(tasks::show))
        .routes(routes!(tasks::output))
        .routes(routes!(tasks::input))
        .routes(routes!(tasks::attempt))
        .routes(routes!(tasks::cancel))
        .routes(routes!(tasks::set_priority))
        .routes(routes!(tasks::show_group, tasks::set_group_limit))
        .routes(routes!(observe::log))
        .routes(routes!(observe::running))
        .routes(routes!(observe::nodes))
        .routes(routes!(status::status))
        .routes(routes!(history::history))
        .routes(routes!(schedules::create, schedules::list))
        .routes(routes!(schedules::show, schedules::delete))
        .routes(routes!(schedules::pause))
        .routes(routes!(schedules::resume))
        .routes(routes!(schedules::run_now))
        .routes(routes!(redrive::retry_batch))
        .routes(routes!(pause::pause_batch))
        .routes(routes!(pause::resume_batch))
        .routes(routes!(pause::set_max_parallel))
        .routes(routes!(redrive::retry_task))
        .routes(routes!(redrive::retry_where))
        .routes(routes!(redrive::cancel_where))
        .routes(routes!(redrive::priority_where))
        .routes(routes!(groups::list_groups))
        .routes(routes!(pause::pause_group))
        .routes(routes!(pause::resume_group))
        .routes(routes!(tenants::add, tenants::list))
        .routes(routes!(tenants::set))
        .routes(routes!(tenants::make_token, tenants::list_tokens))
        .routes(routes!(tenants::revoke_token))
        .routes(routes!(usage::show))
        .routes(routes!(usage::show_batch))
        .routes(routes!(backup::backup))
        .routes(routes!(openapi));
    OpenApiRouter::with_openapi(doc::frame())
        .nest("/v1", v1)
        .routes(routes!(observe::healthz))
        .routes(routes!(observe::readyz))
        .routes(routes!(metrics::metrics))
}

/// The document as served, serialized once.
#[derive(Clone)]
struct Document(Arc<str>);

/// This API as an OpenAPI 3.1 document, generated from the code that serves it.
#[utoipa::path(
    get,
    path = "/openapi.json",
    operation_id = "openapi",
    tag = "observe",
    responses((status = 200, description = "This document", content_type = "application/json", body = Object)),
)]
async fn openapi(Extension(document): Extension<Document>) -> impl IntoResponse {
    ([(CONTENT_TYPE, "application/json")], document.0.to_string())
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
    let privileged = privileged(state.admin_token.clone());
    let app = router(state).layer(Extension(stopping.clone()));
    listen::serve(
        listener,
        ready::App::ready(app),
        limits,
        privileged,
        async move {
            shutdown.await;
            stopping.cancel();
        },
    )
    .await
}

/// A server that listens before it can serve the API: see [`ready`].
pub struct Starting {
    app: ready::App,
    stopping: CancellationToken,
}

impl Starting {
    /// The start has got to `stage`, which `/readyz` says.
    pub fn reached(&self, stage: ready::Stage) {
        self.app.reached(stage);
    }

    /// The server has started: the API answers from now on.
    pub fn start(&self, state: AppState) {
        self.app
            .start(router(state).layer(Extension(self.stopping.clone())));
    }
}

/// Serves `listener` within `limits` until `shutdown` resolves, as [`serve`] does, with
/// only `/healthz` and `/readyz` answered until [`Starting::start`] is given the API's
/// state. `admin_token` may use the room kept past the connection cap meanwhile.
pub fn serve_starting(
    listener: tokio::net::TcpListener,
    admin_token: &str,
    limits: listen::Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> (Starting, tokio::task::JoinHandle<()>) {
    let stopping = CancellationToken::new();
    let app = ready::App::starting();
    let privileged = privileged(admin_token.into());
    let server = tokio::spawn({
        let (app, stopping) = (app.clone(), stopping.clone());
        async move {
            listen::serve(listener, app, limits, privileged, async move {
                shutdown.await;
                stopping.cancel();
            })
            .await
        }
    });
    (Starting { app, stopping }, server)
}

/// Serves `/metrics` alone, to anyone, on a listen address of its own.
pub async fn serve_metrics(
    listener: tokio::net::TcpListener,
    mut state: AppState,
    limits: listen::Limits,
    shutdown: impl Future<Output = ()>,
) {
    state.metrics_open = true;
    let privileged = privileged(state.admin_token.clone());
    let (router, _) = OpenApiRouter::new()
        .routes(routes!(metrics::metrics))
        .split_for_parts();
    let observe = axum::middleware::from_fn_with_state(state.clone(), requests::observe);
    let app = router
        .route_layer(axum::middleware::from_fn(requests::note_route))
        .fallback(fallback::not_found)
        .with_state(state)
        .layer(axum::middleware::from_fn(fallback::json_failures))
        .layer(observe);
    listen::serve(
        listener,
        ready::App::ready(app),
        limits,
        privileged,
        shutdown,
    )
    .await
}

/// What may use the room kept past the connection cap: `/healthz`, `/readyz`, and the
/// admin.
fn privileged(token: Arc<str>) -> listen::Privileged {
    Arc::new(move |uri, headers| {
        matches!(uri.path(), "/healthz" | "/readyz")
            || auth::bearer(headers).is_some_and(|t| auth::same_token(t, &token))
    })
}
