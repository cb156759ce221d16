//! What a node measures for `/metrics`: claim latency, run latency and attempts by
//! outcome, each by module (label `module`), in fixed-bucket histograms and counters of
//! atomics, so recording costs no lock.
//!
//! A module is labelled by the name it is shown by (see [`super::module_labels`]). The
//! labels are bounded: past [`MAX_MODULES`] distinct names since the node started, further
//! modules are counted together as `module="other"`, so that a stream of new modules
//! cannot grow `/metrics` (and a scraper's series) without bound.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
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
/// Distinct module labels at most; further modules are counted as `other`.
pub const MAX_MODULES: usize = 50;
/// The label of the modules past [`MAX_MODULES`].
pub const OTHER: &str = "other";

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

    /// The bucket, sum and count lines of this histogram, with `labels` (`module="x",`).
    fn render_lines(&self, name: &str, labels: &str, out: &mut String) {
        let mut cumulative = 0;
        for (bound, bucket) in BOUNDS.iter().zip(&self.buckets) {
            cumulative += bucket.load(Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels}le=\"{bound}\"}} {cumulative}");
        }
        cumulative += self.buckets[BOUNDS.len()].load(Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels}le=\"+Inf\"}} {cumulative}");
        let sum = self.sum_micros.load(Relaxed) as f64 / 1e6;
        let labels = labels.trim_end_matches(',');
        let _ = writeln!(
            out,
            "{name}_sum{{{labels}}} {sum}\n{name}_count{{{labels}}} {cumulative}"
        );
    }
}

/// Which histogram of a module's series.
type Pick = fn(&ModuleSeries) -> &Histogram;

/// One module's measurements on this node.
#[derive(Default)]
pub struct ModuleSeries {
    /// Submission to first claim, for the tasks submitted through this node.
    pub claim_latency: Histogram,
    /// How long attempts ran.
    pub run_latency: Histogram,
    outcomes: [AtomicU64; Outcome::ALL.len()],
}

/// The node's measurements.
#[derive(Default)]
pub struct Metrics {
    /// Each module's series, by label; at most [`MAX_MODULES`] and `other`. A std mutex,
    /// taken when a module is first shown, never on the hot path.
    modules: Mutex<HashMap<Arc<str>, Arc<ModuleSeries>>>,
    /// When each task submitted here and not yet claimed was submitted. A std mutex: held
    /// for a map operation, never across an await.
    submitted: Mutex<HashMap<TaskId, Micros>>,
}

impl Metrics {
    /// The series of the module labelled `name`: its own while fewer than
    /// [`MAX_MODULES`] are labelled, else `other`'s.
    pub(crate) fn series(&self, name: &str) -> Arc<ModuleSeries> {
        let mut modules = self.modules.lock().expect("metrics lock");
        if let Some(series) = modules.get(name) {
            return series.clone();
        }
        let own = modules.keys().filter(|k| &***k != OTHER).count();
        let label: Arc<str> = if own < MAX_MODULES && name != OTHER {
            name.into()
        } else {
            OTHER.into()
        };
        modules.entry(label).or_default().clone()
    }

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

    /// A task was claimed at `at`: its claim latency, if it was submitted here.
    pub(crate) fn claimed(&self, task: TaskId, at: Micros, series: &ModuleSeries) {
        let submitted = self.submitted.lock().expect("metrics lock").remove(&task);
        if let Some(submitted) = submitted {
            series
                .claim_latency
                .observe(u64::try_from(at - submitted).unwrap_or(0));
        }
    }

    pub(crate) fn ran(&self, series: &ModuleSeries, outcome: Outcome, took: Duration) {
        series.run_latency.observe(took.as_micros() as u64);
        let index = Outcome::ALL.iter().position(|&o| o == outcome).unwrap_or(0);
        series.outcomes[index].fetch_add(1, Relaxed);
    }

    /// The measurements in Prometheus text format, modules by label.
    pub fn render(&self, out: &mut String) {
        let mut modules: Vec<(Arc<str>, Arc<ModuleSeries>)> = self
            .modules
            .lock()
            .expect("metrics lock")
            .iter()
            .map(|(name, series)| (name.clone(), series.clone()))
            .collect();
        modules.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let labels: Vec<String> = modules
            .iter()
            .map(|(name, _)| format!("module=\"{}\",", label(name)))
            .collect();
        let histograms: [(&str, &str, Pick); 2] = [
            (
                "qhost_claim_latency_seconds",
                "From submission to claim, for first attempts of tasks submitted to this node, \
                 by module.",
                |s| &s.claim_latency,
            ),
            (
                "qhost_run_latency_seconds",
                "How long attempts on this node ran, by module.",
                |s| &s.run_latency,
            ),
        ];
        for (name, help, histogram) in histograms {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
            for ((_, series), labels) in modules.iter().zip(&labels) {
                histogram(series).render_lines(name, labels, out);
            }
        }
        let _ = writeln!(
            out,
            "# HELP qhost_attempts_total Attempts ended on this node, by module and outcome.\n\
             # TYPE qhost_attempts_total counter"
        );
        for ((_, series), labels) in modules.iter().zip(&labels) {
            for (outcome, count) in Outcome::ALL.iter().zip(&series.outcomes) {
                let _ = writeln!(
                    out,
                    "qhost_attempts_total{{{labels}outcome=\"{}\"}} {}",
                    outcome.as_str(),
                    count.load(Relaxed)
                );
            }
        }
    }
}

/// A label value as the Prometheus text format escapes it; every series of `/metrics`
/// writes its labels through it.
pub(crate) fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_labels_are_bounded() {
        let metrics = Metrics::default();
        for n in 0..MAX_MODULES {
            let series = metrics.series(&format!("m{n}"));
            metrics.ran(&series, Outcome::Succeeded, Duration::from_millis(1));
        }
        let past = metrics.series("one-too-many");
        metrics.ran(&past, Outcome::Trap, Duration::from_millis(1));
        metrics.ran(&metrics.series("another"), Outcome::Trap, Duration::ZERO);
        assert!(Arc::ptr_eq(&past, &metrics.series("another")));
        let mut text = String::new();
        metrics.render(&mut text);
        assert!(text.contains("qhost_attempts_total{module=\"m0\",outcome=\"succeeded\"} 1"));
        assert!(text.contains("qhost_attempts_total{module=\"other\",outcome=\"trap\"} 2"));
        assert!(!text.contains("one-too-many"));
        assert!(text.contains("qhost_run_latency_seconds_count{module=\"other\"} 2"));
        let modules: std::collections::HashSet<&str> = text
            .lines()
            .filter_map(|l| l.split("module=\"").nth(1)?.split('"').next())
            .collect();
        assert_eq!(modules.len(), MAX_MODULES + 1);
    }
}
