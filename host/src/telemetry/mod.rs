//! Logs and traces: the `tracing` subscriber a process installs, with a log to stderr
//! (text or JSON lines, filtered by `QHOST_LOG`) and, when an OTLP endpoint is set,
//! OpenTelemetry spans exported over OTLP/HTTP.
//!
//! - [`export`]: the exporter, its HTTP client and its batching.
//! - [`attempt`]: attempts' spans, made with the SDK directly.
//! - [`context`]: W3C trace contexts: of the current span, stored with a task, read from
//!   a request's `traceparent` header.
//!
//! Traces are off unless an endpoint is given (`--otlp-endpoint`, or the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`). While they are
//! off, [`on`] is false and the hot path makes no span at all: callers check it and build
//! `Span::none()` (or no [`attempt::AttemptSpan`]), and no trace context is read, stored
//! or parsed.
//!
//! Spans have the target [`TARGET`]; only the OpenTelemetry layer sees them, so the log
//! reads the same with traces on or off.

pub mod attempt;
pub mod context;
pub mod export;

use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context as _;
use tracing_subscriber::filter::{EnvFilter, FilterExt as _, filter_fn};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{Layer, Registry};

/// The target of every span exported as a trace.
pub const TARGET: &str = "qhost::trace";

/// Whether spans are exported: set once, when the subscriber is installed with an
/// exporter.
static ON: AtomicBool = AtomicBool::new(false);

/// Whether traces are exported; when false, no span is made.
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// What a process logs and traces.
#[derive(Debug, Default)]
pub struct Settings {
    /// Log to stderr, as JSON lines if `Some(true)`; none: no log (the benchmarks).
    pub log: Option<bool>,
    /// The OTLP/HTTP endpoint, a base URL (`/v1/traces` is added) as
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` is; none: the standard variables, if set.
    pub otlp_endpoint: Option<String>,
    /// This node's name, the `service.instance.id` of its spans.
    pub node: String,
}

/// Keeps the exporter; [`Guard::shutdown`] (or dropping it) sends what is queued.
#[must_use = "dropping the guard shuts the exporter down"]
pub struct Guard {
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Guard {
    /// Exports the spans still queued and stops the exporter.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(provider) = self.provider.take() {
            ON.store(false, Ordering::Relaxed);
            if let Err(err) = provider.shutdown() {
                tracing::warn!("sending the last spans to the OTLP endpoint failed: {err}");
            }
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether traces are asked for: by `endpoint`, or by the standard variables.
pub fn traces_asked(endpoint: Option<&str>) -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    endpoint.is_some_and(|e| !e.trim().is_empty())
        || set("OTEL_EXPORTER_OTLP_ENDPOINT")
        || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
}

/// Installs the process's subscriber: the log and, when asked for, the trace exporter.
pub fn init(settings: Settings) -> anyhow::Result<Guard> {
    let mut layers: Vec<Box<dyn Layer<Registry> + Send + Sync>> = Vec::new();
    if let Some(json) = settings.log {
        layers.push(log_layer(json));
    }
    let provider = if traces_asked(settings.otlp_endpoint.as_deref()) {
        let provider = export::provider(settings.otlp_endpoint.as_deref(), &settings.node)
            .context("setting `otlp_endpoint`")?;
        use opentelemetry::trace::TracerProvider as _;
        let tracer = provider.tracer("qhost");
        attempt::set_tracer(tracer.clone());
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            // Attributes and timing the spans do not need, each a cost on every enter.
            .with_tracked_inactivity(false)
            .with_threads(false)
            .with_location(false)
            .with_level(false)
            .with_target(false)
            .with_context_activation(false)
            .with_filter(
                filter_fn(|meta| meta.is_span() && meta.target() == TARGET)
                    .with_max_level_hint(tracing::level_filters::LevelFilter::INFO),
            );
        layers.push(layer.boxed());
        Some(provider)
    } else {
        None
    };
    tracing_subscriber::registry()
        .with(layers)
        .try_init()
        .context("installing the log")?;
    if provider.is_some() {
        ON.store(true, Ordering::Relaxed);
    }
    Ok(Guard { provider })
}

/// The log to stderr at the level `QHOST_LOG` sets (default `info`), without the spans
/// made for traces.
fn log_layer(json: bool) -> Box<dyn Layer<Registry> + Send + Sync> {
    let filter = EnvFilter::try_from_env("QHOST_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let filter = filter.and(filter_fn(|meta| meta.target() != TARGET));
    // Colours only for a terminal (and no NO_COLOR): a file or a log collector would get
    // escape codes.
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let layer = tracing_subscriber::fmt::layer()
        .with_ansi(colour)
        .with_writer(std::io::stderr);
    if json {
        layer.json().with_filter(filter).boxed()
    } else {
        layer.with_filter(filter).boxed()
    }
}

/// Text cut to at most `max` bytes, at a character boundary: errors in log lines and span
/// attributes stay bounded.
pub fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A duration in milliseconds to the microsecond, as log lines give it: `1.198`, not
/// `1.1987619999999999`.
pub fn millis(duration: std::time::Duration) -> f64 {
    duration.as_micros() as f64 / 1e3
}

#[cfg(test)]
mod tests {
    #[test]
    fn millis_read_as_written() {
        use std::time::Duration;
        let shown = |d: Duration| super::millis(d).to_string();
        assert_eq!(shown(Duration::from_nanos(1_198_762)), "1.198");
        assert_eq!(shown(Duration::from_nanos(5_418)), "0.005");
        assert_eq!(shown(Duration::from_secs(2)), "2000");
    }

    #[test]
    fn cut_keeps_characters_whole() {
        assert_eq!(super::cut("héllo", 2), "h");
        assert_eq!(super::cut("héllo", 3), "hé");
        assert_eq!(super::cut("short", 10), "short");
    }
}
