//! Failed and cancelled tasks run again (re-drive), and bulk actions on the tasks a
//! [`TaskSelect`] names: cancel, re-drive, priority.
//!
//! A batch handle acts only within its own batch: its selection must name the batch. A
//! re-drive may reopen a batch that had ended (see [`crate::store::Store::task_retry`]):
//! waiting on it waits again, and its event stream's `end` comes again once it ends.

use super::{Access, BatchEvent, Error, Result, Scheduler};
use crate::runtime::Outcome;
use crate::store::*;

/// The outcomes of failed tasks: every one but `succeeded` and `cancelled`. A re-drive
/// that names no outcome runs the failed tasks again, not the cancelled ones.
pub const FAILURES: [Outcome; 9] = [
    Outcome::GuestError,
    Outcome::Trap,
    Outcome::Timeout,
    Outcome::MemoryLimit,
    Outcome::OutputTooLarge,
    Outcome::HttpLimit,
    Outcome::Budget,
    Outcome::Lost,
    Outcome::HostError,
];

impl Scheduler {
    /// Runs a failed or cancelled task again; returns it as it is then.
    pub async fn task_retry(&self, access: &Access, task: TaskId) -> Result<TaskInfo> {
        let info = self.task_for(access, task).await?;
        let not_ended = |state: TaskState| {
            Error::Conflict(format!(
                "task {task} is {}: only a failed or cancelled task can run again",
                state.as_str()
            ))
        };
        if !matches!(info.state, TaskState::Failed | TaskState::Cancelled) {
            return Err(not_ended(info.state));
        }
        if self.store.task_retry(TaskSelect::task(task)).await? == 0 {
            // It changed meanwhile (another re-drive took it).
            return Err(not_ended(self.store.task_get(task).await?.state));
        }
        self.after_retry();
        Ok(self.store.task_get(task).await?)
    }

    /// Runs the tasks `select` names that failed, or ended with one of its `outcomes`,
    /// again; returns how many. With no outcome nor state named, only failed tasks run
    /// again ([`FAILURES`]), but for a task named by its id, which runs again whether it
    /// failed or was cancelled; name `cancelled` to run cancelled ones again.
    pub async fn tasks_retry(&self, access: &Access, mut select: TaskSelect) -> Result<u64> {
        self.authorize_select(access, &mut select).await?;
        if select.outcomes.is_empty() && select.states.is_empty() && select.task.is_none() {
            select.outcomes = FAILURES.to_vec();
        }
        let retried = self.store.task_retry(select).await?;
        if retried > 0 {
            self.after_retry();
        }
        Ok(retried)
    }

    /// Cancels the pending tasks `select` names and stops its claimed ones.
    pub async fn tasks_cancel(
        &self,
        access: &Access,
        mut select: TaskSelect,
    ) -> Result<BulkCancel> {
        self.authorize_select(access, &mut select).await?;
        let result = self.store.task_cancel_where(select, now_micros()).await?;
        // Cancelled tasks may close their orders and open the next ones, or end batches.
        self.wake.notify_one();
        self.hooks_wake.notify_one();
        if result.stopping > 0 {
            // The lease keeper learns which, stops those running here and hands back the
            // reserved ones.
            self.renew_now.notify_one();
        }
        self.notify_batch(BatchEvent::ANY);
        Ok(result)
    }

    /// Sets the priority of the tasks `select` names that have not started; returns how
    /// many changed.
    pub async fn tasks_set_priority(
        &self,
        access: &Access,
        mut select: TaskSelect,
        priority: i32,
    ) -> Result<u64> {
        self.authorize_select(access, &mut select).await?;
        if let Some(batch) = select.batch {
            let tenant = self.authorize_with(access, batch, true).await?;
            self.check_for_tenant(tenant, Some(priority), &[]).await?;
        }
        let changed = self.store.task_set_priority_where(select, priority).await?;
        self.reclaim.notify_one();
        Ok(changed)
    }

    /// A handle selects within its own batch only: a selection that names no batch is
    /// confined to the handle's.
    async fn authorize_select(&self, access: &Access, select: &mut TaskSelect) -> Result<()> {
        select.batch = self.confine(access, select.batch).await?;
        Ok(())
    }

    /// After a re-drive: a gate that moved down reaches the tasks reserved above it, which
    /// go back (and the claim loop wakes once they are back, or at once).
    fn after_retry(&self) {
        self.reclaim.notify_one();
    }
}
