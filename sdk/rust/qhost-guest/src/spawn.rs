//! Children submitted from a running task into its own batch, and the task's own
//! continuation: [`child`] builds one, [`Child::submit`] sends it, [`suspend`] gives the
//! slot back until every child has ended, [`saved`] reads what the suspended run kept.
//!
//! ```ignore
//! match qhost_guest::spawn::saved()? {
//!     None => {
//!         for (n, part) in parts.iter().enumerate() {
//!             qhost_guest::spawn::child(format!("part-{n}"), part.as_bytes()).submit()?;
//!         }
//!         qhost_guest::spawn::suspend(&[])?;
//!         Ok(Vec::new())
//!     }
//!     Some(_) => merge(qhost_guest::graph::inputs()?),
//! }
//! ```
//!
//! A child may do no more than its parent: its priority is at most the parent's, its
//! group is the parent's or none, its limits are within the parent's and its mounts among
//! the parent's. A refusal is an error naming what was refused.

use std::time::Duration;

use crate::bindings::qhost::task::spawn as raw;

/// A task's id, unique in its qhost store.
pub type TaskId = u64;

/// A child to submit: its key among this task's children and its input; by default it
/// runs this task's own module, with this task's priority and limits, in no group.
#[derive(Debug, Clone)]
pub struct Child(raw::Child);

/// A child named `key` (1 to 100 characters) with `input`. A later attempt of this task
/// that submits the same key gets the child submitted then, not a second one.
pub fn child(key: impl Into<String>, input: impl Into<Vec<u8>>) -> Child {
    Child(raw::Child {
        key: key.into(),
        module: None,
        input: input.into(),
        after: Vec::new(),
        group: None,
        priority: None,
        memory: None,
        timeout_ms: None,
        mounts: Vec::new(),
        max_attempts: None,
    })
}

impl Child {
    /// Runs the module `name` (a name or a digest) instead of this task's own.
    pub fn module(mut self, name: impl Into<String>) -> Self {
        self.0.module = Some(name.into());
        self
    }

    /// Runs after these children of this task; it reads their outputs through
    /// [`crate::graph::inputs`].
    pub fn after(mut self, tasks: impl IntoIterator<Item = TaskId>) -> Self {
        self.0.after.extend(tasks);
        self
    }

    /// In `group`, which must be this task's own.
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.0.group = Some(group.into());
        self
    }

    /// At `priority`, at most this task's.
    pub fn priority(mut self, priority: i32) -> Self {
        self.0.priority = Some(priority);
        self
    }

    /// With at most `bytes` of memory, at most this task's limit.
    pub fn memory(mut self, bytes: u64) -> Self {
        self.0.memory = Some(bytes);
        self
    }

    /// Stopped after `timeout` (to the millisecond, rounded up), at most this task's.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        let ms =
            timeout.as_millis() + u128::from(!timeout.subsec_nanos().is_multiple_of(1_000_000));
        self.0.timeout_ms = Some(u64::try_from(ms).unwrap_or(u64::MAX));
        self
    }

    /// With this task's mount `name`, writable only if this task's is.
    pub fn mount(mut self, name: impl Into<String>, writable: bool) -> Self {
        self.0.mounts.push(raw::Mount {
            name: name.into(),
            writable,
        });
        self
    }

    /// Making at most `attempts` attempts (1 to 100; 3 when not given).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.0.max_attempts = Some(attempts);
        self
    }

    /// Submits it into this task's batch, at this task's order; its id.
    pub fn submit(&self) -> Result<TaskId, String> {
        raw::submit(&self.0)
    }
}

/// Ends this attempt as `suspended` once the task returns `Ok` (its value is dropped):
/// the slot is given back until every child submitted has ended, then the task runs again
/// on its input, with `state` (at most 1 MiB) from [`saved`] and its children's ends from
/// [`crate::graph::inputs`]. That run uses none of its attempts.
pub fn suspend(state: &[u8]) -> Result<(), String> {
    raw::suspend(state)
}

/// What this task's last suspended run saved; none on a first run.
pub fn saved() -> Result<Option<Vec<u8>>, String> {
    raw::saved()
}

/// The output of a task of this batch; none while it has not succeeded.
pub fn output(task: TaskId) -> Result<Option<Vec<u8>>, String> {
    raw::output(task)
}
