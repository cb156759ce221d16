//! What a task submits into its own batch through `qhost:task/spawn`: children, and its
//! own suspension. The runtime knows nothing of the store or of the batch's authority:
//! each attempt is given a [`Children`] that checks and submits on its behalf, and the
//! runtime only carries the guest's calls there, logs each refusal in the attempt's log,
//! and keeps the state a suspension saves until `run` returns.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::LogLevel;
use super::bindings::qhost::task::spawn;
use super::sandbox::{HostState, MountGrant};

/// The most bytes of state a suspension saves.
pub const MAX_STATE: usize = 1024 * 1024;

/// A child as its parent's guest asks for it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildSpec {
    pub key: String,
    /// A module name or digest; none: the parent's own.
    pub module: Option<String>,
    pub input: Vec<u8>,
    pub after: Vec<u64>,
    pub group: Option<String>,
    pub priority: Option<i32>,
    pub memory: Option<u64>,
    pub timeout_ms: Option<u64>,
    pub mounts: Vec<MountGrant>,
    pub max_attempts: Option<u32>,
}

/// Submits children for one attempt, with its batch's authority, and reads what it may
/// read of its batch. Each `Err` is a refusal the guest sees, naming what was refused.
pub trait Children: Send + Sync + std::fmt::Debug {
    fn submit(&self, child: ChildSpec) -> BoxFuture<'static, Result<u64, String>>;
    fn output(&self, task: u64) -> BoxFuture<'static, Result<Option<Vec<u8>>, String>>;
    /// The state the task's last suspended attempt saved.
    fn saved(&self) -> BoxFuture<'static, Result<Option<Vec<u8>>, String>>;
}

/// What a task without a [`Children`] (run by `qhost run`) is told.
const NO_BATCH: &str = "this task runs outside a batch (`qhost run`): it has no children";

impl HostState {
    fn refused(&mut self, what: &str, why: String) -> String {
        let message = format!("{what} refused: {why}");
        self.log.push(LogLevel::Warn, message.clone());
        message
    }

    fn children(&self) -> Option<Arc<dyn Children>> {
        self.children.clone()
    }
}

impl spawn::Host for HostState {
    async fn submit(&mut self, child: spawn::Child) -> Result<u64, String> {
        let Some(children) = self.children() else {
            return Err(self.refused("spawn", NO_BATCH.into()));
        };
        let spec = ChildSpec {
            key: child.key.clone(),
            module: child.module,
            input: child.input,
            after: child.after,
            group: child.group,
            priority: child.priority,
            memory: child.memory,
            timeout_ms: child.timeout_ms,
            mounts: child
                .mounts
                .into_iter()
                .map(|m| MountGrant {
                    name: m.name,
                    writable: m.writable,
                })
                .collect(),
            max_attempts: child.max_attempts,
        };
        match children.submit(spec).await {
            Ok(id) => Ok(id),
            Err(why) => Err(self.refused(&format!("spawn of child `{}`", child.key), why)),
        }
    }

    async fn output(&mut self, task: u64) -> Result<Option<Vec<u8>>, String> {
        let Some(children) = self.children() else {
            return Err(self.refused("output", NO_BATCH.into()));
        };
        match children.output(task).await {
            Ok(output) => Ok(output),
            Err(why) => Err(self.refused(&format!("output of task {task}"), why)),
        }
    }

    async fn suspend(&mut self, state: Vec<u8>) -> Result<(), String> {
        if self.children.is_none() {
            return Err(self.refused("suspend", NO_BATCH.into()));
        }
        if state.len() > MAX_STATE {
            let why = format!(
                "its state is {} bytes; at most {MAX_STATE} are allowed",
                state.len()
            );
            return Err(self.refused("suspend", why));
        }
        self.suspended = Some(state);
        Ok(())
    }

    async fn saved(&mut self) -> Result<Option<Vec<u8>>, String> {
        match self.children() {
            Some(children) => children.saved().await,
            None => Ok(None),
        }
    }
}
