//! The name a module is shown by in the log, in traces and in `/metrics`, by digest: the
//! name it is shown with everywhere (the last given to it that it still has), or the
//! start of its digest (12 hex digits) when it has none. Each comes with the module's
//! series of measurements (see [`super::metrics::Metrics::series`]).
//!
//! Kept in memory and read again from the store when a claim brings a digest not seen
//! yet, when this node changes names, and at most a minute after the last reading, so
//! that a name given on another node shows here soon.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::metrics::{Metrics, ModuleSeries};
use crate::runtime::Digest;
use crate::store::{ClaimedTask, Store};

/// How long names are trusted before they are read again.
const FRESH: Duration = Duration::from_secs(60);

/// A module as shown: its name and its measurements.
pub(crate) struct Shown {
    pub(crate) name: Arc<str>,
    pub(crate) series: Arc<ModuleSeries>,
}

#[derive(Default)]
pub(crate) struct ModuleLabels {
    inner: Mutex<Labels>,
}

#[derive(Default)]
struct Labels {
    by_digest: HashMap<Digest, Arc<Shown>>,
    /// When the names were read; none: to be read again.
    read_at: Option<Instant>,
}

impl ModuleLabels {
    /// Reads the names again when one of `tasks`' modules is not known or the names are
    /// old; a store that fails keeps the names known (the digest stands for the others).
    pub(crate) async fn know(&self, tasks: &[ClaimedTask], store: &dyn Store, metrics: &Metrics) {
        let stale = {
            let labels = self.inner.lock().expect("labels lock");
            labels.read_at.is_none_or(|at| at.elapsed() > FRESH)
                || tasks
                    .iter()
                    .any(|task| !labels.by_digest.contains_key(&task.module))
        };
        if !stale {
            return;
        }
        let listed = store.module_list().await;
        let mut labels = self.inner.lock().expect("labels lock");
        labels.read_at = Some(Instant::now());
        match listed {
            Ok(modules) => {
                for module in modules {
                    let name = module.name.unwrap_or_else(|| short(&module.digest));
                    let current = labels.by_digest.get(&module.digest);
                    if current.is_none_or(|shown| *shown.name != *name) {
                        let shown = Arc::new(Shown {
                            series: metrics.series(&name),
                            name: name.into(),
                        });
                        labels.by_digest.insert(module.digest, shown);
                    }
                }
            }
            Err(err) => tracing::warn!("reading the modules' names failed: {err:#}"),
        }
        for task in tasks {
            labels.by_digest.entry(task.module).or_insert_with(|| {
                let name = short(&task.module);
                Arc::new(Shown {
                    series: metrics.series(&name),
                    name: name.into(),
                })
            });
        }
    }

    /// How `digest` is shown; its digest's start if it was never read.
    pub(crate) fn of(&self, digest: Digest, metrics: &Metrics) -> Arc<Shown> {
        let mut labels = self.inner.lock().expect("labels lock");
        labels
            .by_digest
            .entry(digest)
            .or_insert_with(|| {
                let name = short(&digest);
                Arc::new(Shown {
                    series: metrics.series(&name),
                    name: name.into(),
                })
            })
            .clone()
    }

    /// Names changed on this node: read them again at the next claim.
    pub(crate) fn forget(&self) {
        self.inner.lock().expect("labels lock").read_at = None;
    }
}

/// The start of a digest, as `module ls` shows it.
fn short(digest: &Digest) -> String {
    digest.to_hex()[..12].to_owned()
}
