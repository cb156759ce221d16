//! The web dashboard at `/`: a few static files compiled into the binary (no build step,
//! no CDN, works offline), which read the same JSON API with the same credentials. They
//! are served with a content security policy that lets the page load and connect to this
//! server only, and never run inline script.

use axum::Router;
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// Each file: its name under `/ui/`, its content type, its bytes.
const ASSETS: &[(&str, &str, &str)] = &[
    ("app.js", JS, include_str!("../../assets/dashboard/app.js")),
    ("api.js", JS, include_str!("../../assets/dashboard/api.js")),
    (
        "view.js",
        JS,
        include_str!("../../assets/dashboard/view.js"),
    ),
    (
        "pages.js",
        JS,
        include_str!("../../assets/dashboard/pages.js"),
    ),
    (
        "tasks.js",
        JS,
        include_str!("../../assets/dashboard/tasks.js"),
    ),
    (
        "task.js",
        JS,
        include_str!("../../assets/dashboard/task.js"),
    ),
    (
        "fleet.js",
        JS,
        include_str!("../../assets/dashboard/fleet.js"),
    ),
    (
        "schedules.js",
        JS,
        include_str!("../../assets/dashboard/schedules.js"),
    ),
    (
        "tenants.js",
        JS,
        include_str!("../../assets/dashboard/tenants.js"),
    ),
    (
        "graph.js",
        JS,
        include_str!("../../assets/dashboard/graph.js"),
    ),
    (
        "timeline.js",
        JS,
        include_str!("../../assets/dashboard/timeline.js"),
    ),
    (
        "charts.js",
        JS,
        include_str!("../../assets/dashboard/charts.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../assets/dashboard/style.css"),
    ),
];
const JS: &str = "text/javascript; charset=utf-8";
const INDEX: &str = include_str!("../../assets/dashboard/index.html");
const POLICY: &str = "default-src 'self'; img-src 'self' data:; object-src 'none'; \
    base-uri 'none'; frame-ancestors 'none'";

/// `GET /` and `GET /ui/{file}`.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|| async { page("text/html; charset=utf-8", INDEX) }),
        )
        .route("/ui/{file}", get(asset))
}

async fn asset(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|(name, _, _)| *name == file) {
        Some((_, kind, body)) => page(kind, body),
        None => super::error::ApiError::new(
            StatusCode::NOT_FOUND,
            super::error::ErrorCode::NotFound,
            format!("the dashboard has no file `{file}`"),
        )
        .into_response(),
    }
}

fn page(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}
