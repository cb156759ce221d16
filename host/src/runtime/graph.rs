//! What a task reads of the tasks it runs after, through `qhost:task/graph`: the runtime
//! knows nothing of the store, so each attempt is given a source ([`Inputs`]) that reads
//! them when the guest first asks, and never otherwise; a task that does not ask costs
//! no read.

use std::fmt;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::bindings::qhost::task::graph;
use super::sandbox::HostState;

/// How a dependency ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepEnded {
    Succeeded,
    Failed,
    Cancelled,
    Skipped,
}

/// One task an attempt's task runs after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    /// Its key in its batch, or its id in decimal.
    pub name: String,
    pub task: u64,
    pub ended: DepEnded,
    /// Its output when it succeeded; else empty.
    pub output: Vec<u8>,
    pub error: Option<String>,
}

type Read = dyn Fn() -> BoxFuture<'static, Result<Vec<Dependency>, String>> + Send + Sync;

/// Reads an attempt's dependencies, when its guest calls `inputs()`; `Err` says why they
/// could not be read.
#[derive(Clone)]
pub struct Inputs(Arc<Read>);

impl Inputs {
    pub fn new(
        read: impl Fn() -> BoxFuture<'static, Result<Vec<Dependency>, String>> + Send + Sync + 'static,
    ) -> Self {
        Inputs(Arc::new(read))
    }
}

impl fmt::Debug for Inputs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Inputs(..)")
    }
}

impl graph::Host for HostState {
    async fn inputs(&mut self) -> Result<Vec<graph::Dependency>, String> {
        let Some(source) = &self.inputs else {
            return Ok(Vec::new());
        };
        let read = (source.0)().await?;
        Ok(read
            .into_iter()
            .map(|d| graph::Dependency {
                name: d.name,
                task: d.task,
                ended: match d.ended {
                    DepEnded::Succeeded => graph::Ended::Succeeded,
                    DepEnded::Failed => graph::Ended::Failed,
                    DepEnded::Cancelled => graph::Ended::Cancelled,
                    DepEnded::Skipped => graph::Ended::Skipped,
                },
                output: d.output,
                error: d.error,
            })
            .collect())
    }
}
