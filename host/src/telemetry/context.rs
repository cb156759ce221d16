//! W3C trace contexts (`traceparent`): read from the current span, to store with a
//! submission's tasks or send on a task's outbound requests; and turned back into a
//! parent, from a stored one or from a request's header.

use std::collections::HashMap;

use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{SpanContext, TraceContextExt as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The header, and the key of the stored context.
pub const TRACEPARENT: &str = "traceparent";

/// The `traceparent` of `span`, when traces are on and it is recorded.
pub fn traceparent(span: &tracing::Span) -> Option<String> {
    if !super::on() || span.is_none() {
        return None;
    }
    of(span.context().span().span_context())
}

/// The `traceparent` of the current span, when traces are on.
pub fn current() -> Option<String> {
    if !super::on() {
        return None;
    }
    traceparent(&tracing::Span::current())
}

/// A context to parent a span on, from a `traceparent`; none if it is not one.
pub fn parse(traceparent: &str) -> Option<Context> {
    let carrier = HashMap::from([(TRACEPARENT.to_owned(), traceparent.to_owned())]);
    let context = TraceContextPropagator::new().extract(&carrier);
    context.span().span_context().is_valid().then_some(context)
}

thread_local! {
    /// The last `traceparent` parsed on this thread, and its context: the tasks of one
    /// submission share one, and a claim takes them together, so most attempts parse
    /// none.
    static LAST_PARENT: std::cell::RefCell<Option<(String, Context)>> =
        const { std::cell::RefCell::new(None) };
}

/// A context to parent a span on, from a `traceparent`, as [`parse`] gives it; the last
/// one parsed on this thread is kept.
pub fn parsed(traceparent: &str) -> Option<Context> {
    LAST_PARENT.with_borrow_mut(|last| match last {
        Some((text, context)) if text == traceparent => Some(context.clone()),
        _ => {
            let context = parse(traceparent)?;
            *last = Some((traceparent.to_owned(), context.clone()));
            Some(context)
        }
    })
}

/// Parents `span` on `traceparent` (a remote parent), when it is one.
pub fn set_parent(span: &tracing::Span, traceparent: &str) {
    if let Some(parent) = parsed(traceparent) {
        let _ = span.set_parent(parent);
    }
}

/// The `traceparent` of a span whose context is `span_context`, when it is valid.
pub fn of(span_context: &SpanContext) -> Option<String> {
    if !span_context.is_valid() {
        return None;
    }
    let context = Context::new().with_remote_span_context(span_context.clone());
    let mut carrier = HashMap::with_capacity(1);
    TraceContextPropagator::new().inject_context(&context, &mut carrier);
    carrier.remove(TRACEPARENT)
}

/// The span context of `span`, to link others to; none when traces are off.
pub fn span_context(span: &tracing::Span) -> Option<SpanContext> {
    if !super::on() || span.is_none() {
        return None;
    }
    let context = span.context();
    let span_context = context.span().span_context().clone();
    span_context.is_valid().then_some(span_context)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_traceparent_reads_back() {
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let context = super::parse(text).expect("a valid traceparent");
        use opentelemetry::trace::TraceContextExt as _;
        assert_eq!(
            context.span().span_context().trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert!(super::parse("00-zz-00f067aa0ba902b7-01").is_none());
        assert!(super::parse("").is_none());
    }
}
