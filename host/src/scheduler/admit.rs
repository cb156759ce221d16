//! The one door into the queue: tasks are checked against the server's bounds and the
//! operator's maxima here, and only tasks checked here, as [`Admitted`], are what the
//! store's submissions, openings and schedule ticks take. A path that skips the checks
//! does not compile.

use std::time::Duration;

use super::{Error, Result};
use crate::runtime::RuntimeConfig;
use crate::runtime::limits::KIB;
use crate::runtime::sandbox::check_grants;
use crate::store::TaskSpec;

pub const MAX_TASKS_PER_SUBMIT: usize = 100_000;
pub const MAX_INPUT: usize = 16 * 1024 * 1024;
pub const MAX_ATTEMPTS: u32 = 100;
/// Longest group key, in characters.
pub const MAX_GROUP_KEY: usize = 200;

/// Tasks that passed [`admit`]: the only way to build one, but for no tasks at all.
#[derive(Debug, Clone, Default)]
pub struct Admitted {
    tasks: Vec<TaskSpec>,
    /// The trace context they were submitted in (`traceparent`), when traces are on:
    /// their attempts join that trace.
    trace: Option<String>,
}

impl Admitted {
    /// No tasks: an empty batch.
    pub fn none() -> Self {
        Admitted::default()
    }

    pub fn tasks(&self) -> &[TaskSpec] {
        &self.tasks
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    pub fn into_tasks(self) -> Vec<TaskSpec> {
        self.tasks
    }

    /// The trace context they were submitted in, if traces are on.
    pub fn trace(&self) -> Option<&str> {
        self.trace.as_deref()
    }

    /// The tasks and the trace context they were submitted in.
    pub fn into_parts(self) -> (Vec<TaskSpec>, Option<String>) {
        (self.tasks, self.trace)
    }

    /// The same tasks, submitted in the trace context `trace` (a W3C `traceparent`); one
    /// that is not a valid `traceparent` is dropped.
    pub fn with_trace(mut self, trace: Option<String>) -> Self {
        self.trace = trace.filter(|t| crate::telemetry::context::parse(t).is_some());
        self
    }
}

/// Admits a submission within the bounds of a server whose runtime is set up as `config`
/// says; refuses one of no tasks, of too many, or with a task out of bounds, naming it.
pub fn admit(config: &RuntimeConfig, tasks: Vec<TaskSpec>) -> Result<Admitted> {
    if tasks.is_empty() {
        return Err(Error::Invalid("no tasks to submit".into()));
    }
    if tasks.len() > MAX_TASKS_PER_SUBMIT {
        return Err(Error::Invalid(format!(
            "{} tasks in one submission; at most {MAX_TASKS_PER_SUBMIT} are allowed",
            tasks.len()
        )));
    }
    for (index, task) in tasks.iter().enumerate() {
        check_task(config, task).map_err(|e| Error::Invalid(format!("task {index}: {e}")))?;
    }
    Ok(Admitted {
        tasks,
        trace: crate::telemetry::context::current(),
    })
}

fn check_task(config: &RuntimeConfig, task: &TaskSpec) -> Result<(), String> {
    if task.input.len() > MAX_INPUT {
        return Err(format!(
            "field `input` is {} bytes; at most {MAX_INPUT} are allowed",
            task.input.len()
        ));
    }
    if let Some(group) = &task.group
        && !(1..=MAX_GROUP_KEY).contains(&group.chars().count())
    {
        return Err(format!(
            "field `group` must be 1 to {MAX_GROUP_KEY} characters"
        ));
    }
    if !(1..=MAX_ATTEMPTS).contains(&task.max_attempts) {
        return Err(format!(
            "field `max_attempts` is {}; it must be 1 to {MAX_ATTEMPTS}",
            task.max_attempts
        ));
    }
    crate::store::check_cost(task.cost).map_err(|e| format!("field {e}"))?;
    if task.cost != 1 && task.group.is_none() {
        return Err(format!(
            "field `cost` is {}, but the task has no group: a task's cost is spent from its \
             group's rate",
            task.cost
        ));
    }
    if task.backoff > Duration::from_secs(3600) {
        return Err("field `backoff` must be at most 1h".into());
    }
    task.limits
        .check_within(&config.max_limits)
        .map_err(|e| format!("field `limits`: {e}"))?;
    if task.limits.log < KIB {
        return Err("field `limits`: limit `log` must be at least 1 KiB".into());
    }
    check_grants(&config.mounts, &task.mounts).map_err(|e| format!("field `mounts`: {e}"))?;
    Ok(())
}
