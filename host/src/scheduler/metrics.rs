//! What a node measures for `/metrics`: claim latency, run latency and attempts by
//! outcome, in fixed-bucket histograms and counters of atomics, so recording costs no lock.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use crate::runtime::Outcome;
use crate::store::{Micros, TaskId};

/// Upper bounds of the histogram buckets, in seconds (Prometheus `le`).
const BOUNDS: [f64; 17] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 300.0,
];
/// Submission times kept for the claim latency; past this, the oldest hour is dropped.
const MAX_PENDING: usize = 1_000_000;

/// A Prometheus histogram with fixed buckets.
#[derive(Default)]
pub struct Histogram {
    /// Observations per bucket (not cumulative); the last is above every bound.
    buckets: [AtomicU64; BOUNDS.len() + 1],
    sum_micros: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, micros: u64) {
        let seconds = micros as f64 / 1e6;
        let index = BOUNDS
            .iter()
            .position(|&bound| seconds <= bound)
            .unwrap_or(BOUNDS.len());
        self.buckets[index].fetch_add(1, Relaxed);
        self.sum_micros.fetch_add(micros, Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.load(Relaxed)).sum()
    }

    fn render(&self, name: &str, help: &str, out: &mut String) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut cumulative = 0;
        for (bound, bucket) in BOUNDS.iter().zip(&self.buckets) {
            cumulative += bucket.load(Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
        }
        cumulative += self.buckets[BOUNDS.len()].load(Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {cumulative}");
        let sum = self.sum_micros.load(Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {cumulative}");
    }
}

/// The node's measurements.
#[derive(Default)]
pub struct Metrics {
    /// Submission to first claim, for the tasks submitted through this node.
    pub claim_latency: Histogram,
    /// How long attempts ran.
    pub run_latency: Histogram,
    outcomes: [AtomicU64; Outcome::ALL.len()],
    /// When each task submitted here and not yet claimed was submitted. A std mutex: held
    /// for a map operation, never across an await.
    submitted: Mutex<HashMap<TaskId, Micros>>,
}

impl Metrics {
    pub(crate) fn submitted(&self, tasks: &[TaskId], at: Micros) {
        let mut submitted = self.submitted.lock().expect("metrics lock");
        if submitted.len() + tasks.len() > MAX_PENDING {
            // Tasks claimed by other nodes or cancelled are never claimed here.
            submitted.retain(|_, &mut t| t > at - 3_600_000_000);
            if submitted.len() + tasks.len() > MAX_PENDING {
                return;
            }
        }
        submitted.extend(tasks.iter().map(|&task| (task, at)));
    }

    pub(crate) fn claimed(&self, task: TaskId, at: Micros) {
        let submitted = self.submitted.lock().expect("metrics lock").remove(&task);
        if let Some(submitted) = submitted {
            self.claim_latency
                .observe(u64::try_from(at - submitted).unwrap_or(0));
        }
    }

    pub(crate) fn ran(&self, outcome: Outcome, took: Duration) {
        self.run_latency.observe(took.as_micros() as u64);
        let index = Outcome::ALL.iter().position(|&o| o == outcome).unwrap_or(0);
        self.outcomes[index].fetch_add(1, Relaxed);
    }

    /// The measurements in Prometheus text format.
    pub fn render(&self, out: &mut String) {
        self.claim_latency.render(
            "qhost_claim_latency_seconds",
            "From submission to claim, for first attempts of tasks submitted to this node.",
            out,
        );
        self.run_latency.render(
            "qhost_run_latency_seconds",
            "How long attempts on this node ran.",
            out,
        );
        let _ = writeln!(
            out,
            "# HELP qhost_attempts_total Attempts ended on this node, by outcome.\n\
             # TYPE qhost_attempts_total counter"
        );
        for (outcome, count) in Outcome::ALL.iter().zip(&self.outcomes) {
            let _ = writeln!(
                out,
                "qhost_attempts_total{{outcome=\"{}\"}} {}",
                outcome.as_str(),
                count.load(Relaxed)
            );
        }
    }
}
