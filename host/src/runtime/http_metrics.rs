//! The count of outbound HTTP requests for `/metrics`, by origin and result.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use super::outcome::HttpCall;

/// Origins counted apart; past this many, further ones count under `other`, so a task
/// cannot grow the metrics without bound (a `:*` entry allows any port).
const MAX_ORIGINS: usize = 1000;

/// Requests by (origin, result). Refused requests count under origin `refused`: their
/// origin is the task's choice, not the operator's.
#[derive(Default)]
pub(crate) struct HttpMetrics(Mutex<HashMap<(String, &'static str), u64>>);

impl HttpMetrics {
    pub(crate) fn count(&self, calls: &[HttpCall]) {
        if calls.is_empty() {
            return;
        }
        let mut counts = self.0.lock().expect("http metrics lock");
        for call in calls {
            let (origin, result) = match (call.refused, &call.error, call.status) {
                (true, _, _) => ("refused".to_owned(), "refused"),
                (false, None, Some(_)) => (call.origin.clone(), "answered"),
                (false, Some(_), Some(_)) => (call.origin.clone(), "cut"),
                (false, _, None) => (call.origin.clone(), "failed"),
            };
            let known = counts.keys().any(|(o, _)| *o == origin);
            let origin = if known || counts.len() < MAX_ORIGINS {
                origin
            } else {
                "other".to_owned()
            };
            *counts.entry((origin, result)).or_default() += 1;
        }
    }

    /// The counter in Prometheus text format.
    pub(crate) fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP qhost_http_requests_total Outbound HTTP requests of tasks on this node, \
             by origin and result (answered, cut: answered but its body not read to the end, \
             failed, refused).\n# TYPE qhost_http_requests_total counter"
        );
        let counts = self.0.lock().expect("http metrics lock");
        let mut rows: Vec<_> = counts.iter().collect();
        rows.sort();
        for ((origin, result), count) in rows {
            let origin = origin.replace('\\', "\\\\").replace('"', "\\\"");
            let _ = writeln!(
                out,
                "qhost_http_requests_total{{origin=\"{origin}\",result=\"{result}\"}} {count}"
            );
        }
    }
}
