//! Readiness apart from liveness. `qhost serve` listens before it opens the store, so
//! that a probe learns how far it got: while it starts, its listener answers `/healthz`
//! (`200`: the process lives) and `/readyz` and every other request `503 not-ready`,
//! saying what is missing; once the store is open and migrated and this node registered,
//! the whole API answers, `/readyz` with `200`.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;

use super::error::ApiError;
use super::observe;

/// How far a starting server has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Stage {
    /// Opening the store and applying its migrations.
    Store = 0,
    /// The store is migrated; registering this node and recovering its previous run.
    Node = 1,
}

impl Stage {
    fn from_u8(value: u8) -> Stage {
        if value == Stage::Store as u8 {
            Stage::Store
        } else {
            Stage::Node
        }
    }

    /// What is still missing, for people.
    fn missing(self) -> &'static str {
        match self {
            Stage::Store => {
                "the server is starting: the store is not open and migrated yet, and this \
                 node is not registered yet"
            }
            Stage::Node => {
                "the server is starting: the store is migrated; this node is not registered \
                 yet (or is recovering the attempts of its previous run)"
            }
        }
    }
}

/// What a listener answers with: the API once the server has started, and until then a
/// router of its own that says how far the start has got.
#[derive(Clone)]
pub struct App {
    api: Arc<OnceLock<Router>>,
    starting: Router,
    stage: Arc<AtomicU8>,
}

impl App {
    /// A server that serves `api` at once: it has started.
    pub fn ready(api: Router) -> App {
        let app = App::starting();
        app.start(api);
        app
    }

    /// A server starting: the store is not open yet.
    pub fn starting() -> App {
        let stage = Arc::new(AtomicU8::new(Stage::Store as u8));
        let readyz = {
            let stage = stage.clone();
            move || async move { not_ready(Stage::from_u8(stage.load(Ordering::Acquire))) }
        };
        let fallback = {
            let stage = stage.clone();
            move || async move { not_ready(Stage::from_u8(stage.load(Ordering::Acquire))) }
        };
        let starting = Router::new()
            .route("/healthz", get(observe::healthz))
            .route("/readyz", get(readyz))
            .fallback(fallback);
        App {
            api: Arc::new(OnceLock::new()),
            starting,
            stage,
        }
    }

    /// The start has got to `stage`.
    pub fn reached(&self, stage: Stage) {
        self.stage.store(stage as u8, Ordering::Release);
    }

    /// The server has started: `api` answers every request from now on.
    pub fn start(&self, api: Router) {
        if self.api.set(api).is_err() {
            tracing::warn!("the API was started twice; the first one answers");
        }
    }

    /// The router that answers a request now.
    pub fn router(&self) -> &Router {
        self.api.get().unwrap_or(&self.starting)
    }
}

fn not_ready(stage: Stage) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        super::error::ErrorCode::NotReady,
        stage.missing(),
    )
}

#[cfg(test)]
mod tests {
    use axum::body::{Body, to_bytes};
    use axum::http::Request;
    use tower::ServiceExt as _;

    use super::*;

    async fn ask(app: &App, path: &str) -> (u16, String) {
        let request = Request::get(path).body(Body::empty()).unwrap();
        let response = app.router().clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let body = to_bytes(response.into_body(), 1 << 20).await.unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn a_starting_server_is_alive_and_says_what_it_lacks_until_it_has_started() {
        let app = App::starting();
        assert_eq!(ask(&app, "/healthz").await, (200, "ok".to_owned()));
        let (status, body) = ask(&app, "/readyz").await;
        assert_eq!(status, 503);
        assert!(
            body.contains("not-ready") && body.contains("store is not open"),
            "{body}"
        );
        let (status, body) = ask(&app, "/v1/status").await;
        assert_eq!(status, 503, "{body}");
        app.reached(Stage::Node);
        let (status, body) = ask(&app, "/readyz").await;
        assert_eq!(status, 503);
        assert!(body.contains("not registered"), "{body}");
        app.start(Router::new().route("/readyz", get(|| async { "ready" })));
        assert_eq!(ask(&app, "/readyz").await, (200, "ready".to_owned()));
    }
}
