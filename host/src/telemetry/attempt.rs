//! An attempt's span, made with the OpenTelemetry SDK directly rather than through the
//! `tracing` layer: a node ends tens of thousands of attempts a second, and the layer's
//! bookkeeping for each (a registry entry, field visitors, an enter and an exit per poll)
//! was about half of what traces cost the drain.
//!
//! The span starts with the attempt, so its context is known while the attempt runs: its
//! outbound requests and the children it submits carry it as their `traceparent`.

use std::sync::{Arc, OnceLock};

use opentelemetry::trace::{Link, Span as _, SpanContext, SpanKind, Status, Tracer as _};
use opentelemetry::{KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::{SdkTracer, Span};

/// The tracer attempts' spans are made with: set once, when traces are turned on.
static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// Makes attempts' spans with `tracer` from now on; the first tracer set stays.
pub(super) fn set_tracer(tracer: SdkTracer) {
    let _ = TRACER.set(tracer);
}

/// What an attempt's span names. Not its node: the resource (`service.instance.id`)
/// names it once for every span a node sends, and each attribute costs the exporter and
/// the collector something for every attempt (the exporter's share of the machine's time
/// fell by a fifth, measured, without the node's and the slot's). The slot is in the log
/// line.
pub struct Attempt<'a> {
    pub task: i64,
    pub batch: i64,
    pub attempt: u32,
    pub module: &'a Arc<str>,
    /// The `traceparent` its task was submitted under: the span's parent.
    pub parent: Option<&'a str>,
    /// The claim that took it: the span's link.
    pub claim: Option<&'a SpanContext>,
}

/// A running attempt's span; [`AttemptSpan::end`] records how it went. Dropped unended
/// (the task handed back), it ends then, with no outcome.
pub struct AttemptSpan(Span);

impl AttemptSpan {
    /// Starts the span of `attempt` now; none while traces are off.
    pub fn start(attempt: &Attempt<'_>) -> Option<AttemptSpan> {
        if !super::on() {
            return None;
        }
        let tracer = TRACER.get()?;
        let parent = attempt
            .parent
            .and_then(super::context::parsed)
            .unwrap_or_default();
        let shared = |text: &Arc<str>| Value::String(StringValue::from(text.clone()));
        let attributes = vec![
            KeyValue::new("qhost.task", attempt.task),
            KeyValue::new("qhost.batch", attempt.batch),
            KeyValue::new("qhost.attempt", i64::from(attempt.attempt)),
            KeyValue::new("qhost.module", shared(attempt.module)),
        ];
        let mut builder = tracer
            .span_builder("attempt")
            .with_kind(SpanKind::Consumer)
            .with_attributes(attributes);
        if let Some(claim) = attempt.claim {
            builder = builder.with_links(vec![Link::with_context(claim.clone())]);
        }
        Some(AttemptSpan(tracer.build_with_context(builder, &parent)))
    }

    /// The span's context: the attempt's requests and children carry it (as a
    /// `traceparent`, see [`super::context::of`]).
    pub fn context(&self) -> &SpanContext {
        self.0.span_context()
    }

    /// Ends the span now with `outcome`, and an error status (with `error`, cut by the
    /// caller) if it `failed`.
    pub fn end(mut self, outcome: &'static str, failed: bool, error: Option<&str>) {
        self.0
            .set_attribute(KeyValue::new("qhost.outcome", outcome));
        if failed {
            self.0
                .set_status(Status::error(error.unwrap_or(outcome).to_owned()));
        }
        self.0.end();
    }
}
