//! The children a running task submits (`qhost:task/spawn`), attenuated, never amplified:
//! each is checked against its parent (group, limits, mounts here; priority, the quotas on
//! children and depth, and `after` in the store's transaction, see
//! [`crate::store::spawn`]), then passes the same door as any submission
//! ([`Scheduler::check_tasks`]). The guest never holds the batch's authority: it asks
//! this, which submits into its parent's batch only.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::Scheduler;
use crate::runtime::{ChildSpec, Children, Digest, MountGrant, TaskLimits};
use crate::store::spawn::{MAX_CHILD_KEY, child_key};
use crate::store::*;

/// A running attempt's side of `qhost:task/spawn`: what its task may give its children.
pub(crate) struct Parent {
    pub(crate) scheduler: Arc<Scheduler>,
    pub(crate) id: TaskId,
    pub(crate) batch: BatchId,
    pub(crate) module: Digest,
    pub(crate) order: i64,
    pub(crate) group: Option<String>,
    pub(crate) limits: TaskLimits,
    pub(crate) mounts: Vec<MountGrant>,
    /// The context of its attempt's span, when traces are on: its children's parent.
    pub(crate) trace: Option<opentelemetry::trace::SpanContext>,
}

impl std::fmt::Debug for Parent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parent")
            .field("id", &self.id)
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

impl Parent {
    /// The spec of `child`, within what its parent may do; refusals name the field.
    async fn spec(&self, child: ChildSpec) -> Result<TaskSpec, String> {
        if !(1..=MAX_CHILD_KEY).contains(&child.key.chars().count()) {
            return Err(format!(
                "field `key` must be 1 to {MAX_CHILD_KEY} characters"
            ));
        }
        if child.group.is_some() && child.group != self.group {
            return Err(format!(
                "field `group` is `{}`; a child's group is its parent's ({}) or none",
                child.group.as_deref().unwrap_or_default(),
                self.group
                    .as_deref()
                    .map_or("none".into(), |g| format!("`{g}`"))
            ));
        }
        let mut limits = self.limits;
        if let Some(memory) = child.memory {
            if memory > self.limits.memory {
                return Err(format!(
                    "field `memory` is {memory} bytes; a child's is at most its parent's ({})",
                    self.limits.memory
                ));
            }
            limits.memory = memory;
        }
        if let Some(ms) = child.timeout_ms {
            let timeout = Duration::from_millis(ms);
            if timeout > self.limits.timeout {
                return Err(format!(
                    "field `timeout-ms` is {ms}; a child's is at most its parent's ({})",
                    self.limits.timeout.as_millis()
                ));
            }
            limits.timeout = timeout;
        }
        for mount in &child.mounts {
            let held = self.mounts.iter().find(|m| m.name == mount.name);
            if held.is_none_or(|held| mount.writable && !held.writable) {
                return Err(format!(
                    "field `mounts` asks for mount `{}`{}, which its parent does not have",
                    mount.name,
                    if mount.writable { " writable" } else { "" }
                ));
            }
        }
        let module = match &child.module {
            None => self.module,
            Some(name) => self.module_named(name).await?,
        };
        let priority = match child.priority {
            Some(priority) => priority,
            None => {
                self.scheduler
                    .store
                    .task_get(self.id)
                    .await
                    .map_err(|e| e.to_string())?
                    .priority
            }
        };
        let mut spec = TaskSpec::new(module, child.input);
        spec.order = self.order;
        spec.group = child.group;
        spec.priority = Some(priority);
        spec.limits = limits;
        spec.mounts = child.mounts;
        spec.max_attempts = child.max_attempts.unwrap_or(spec.max_attempts);
        spec.key = Some(child_key(self.id, &child.key));
        spec.after = child
            .after
            .into_iter()
            .map(|id| Dep::task(id as TaskId))
            .collect();
        spec.on_failure = OnFailure::Run;
        // Another module than its parent's is one its tenant must allow; the parent's
        // own passed when the parent was submitted.
        if spec.module != self.module {
            self.scheduler
                .check_child(self.batch, &spec)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(spec)
    }

    /// The module `name` names: a whole digest, or one of the modules' names.
    async fn module_named(&self, name: &str) -> Result<Digest, String> {
        if let Ok(digest) = Digest::from_hex(name) {
            return Ok(digest);
        }
        let found = self
            .scheduler
            .store
            .module_lookup(vec![name.to_owned()])
            .await
            .map_err(|e| e.to_string())?;
        found
            .into_iter()
            .next()
            .map(|(_, digest)| digest)
            .ok_or_else(|| format!("field `module`: no module has the name `{name}`"))
    }

    async fn submit(self: Arc<Self>, child: ChildSpec) -> Result<u64, String> {
        let spec = self.spec(child).await?;
        let scheduler = &self.scheduler;
        let admitted = scheduler
            .check_tasks(vec![spec])
            .map_err(|e| e.to_string().replacen("task 0: ", "", 1))?
            .with_trace(self.trace.as_ref().and_then(crate::telemetry::context::of));
        let now = now_micros();
        let id = scheduler
            .store
            .task_spawn(self.id, admitted, now)
            .await
            .map_err(|e| e.to_string().replacen("task 0: ", "", 1))?;
        scheduler.metrics.submitted(&[id], now);
        scheduler.wake.notify_one();
        scheduler.notify_batch(self.batch);
        Ok(id as u64)
    }

    async fn output(self: Arc<Self>, task: u64) -> Result<Option<Vec<u8>>, String> {
        let task = task as TaskId;
        // Alike for a task of another batch and one that does not exist.
        let other = || format!("task {task} is not of this task's batch ({})", self.batch);
        let info = match self.scheduler.store.task_get(task).await {
            Ok(info) if info.batch == self.batch => info,
            Ok(_) | Err(StoreError::NotFound { .. }) => return Err(other()),
            Err(err) => return Err(err.to_string()),
        };
        if info.state != TaskState::Succeeded {
            return Ok(None);
        }
        self.scheduler
            .store
            .task_output(task)
            .await
            .map_err(|e| e.to_string())
    }
}

/// A [`Parent`] shared by the attempt's calls.
#[derive(Debug, Clone)]
pub(crate) struct Spawner(pub(crate) Arc<Parent>);

impl Children for Spawner {
    fn submit(&self, child: ChildSpec) -> BoxFuture<'static, Result<u64, String>> {
        Box::pin(self.0.clone().submit(child))
    }

    fn output(&self, task: u64) -> BoxFuture<'static, Result<Option<Vec<u8>>, String>> {
        Box::pin(self.0.clone().output(task))
    }

    fn saved(&self) -> BoxFuture<'static, Result<Option<Vec<u8>>, String>> {
        let parent = self.0.clone();
        Box::pin(async move {
            parent
                .scheduler
                .store
                .task_saved(parent.id)
                .await
                .map_err(|e| e.to_string())
        })
    }
}
