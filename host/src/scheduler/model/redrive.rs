//! Bulk actions on the [`Model`]: the tasks a [`TaskSelect`] names are cancelled,
//! reprioritized, or run again (re-driven).
//!
//! A re-driven task is pending again: it is at its batch's gate when its order is the
//! lowest open one, which may close the gate again for higher orders (only for their tasks
//! that have not started: claimed ones stay claimed). It keeps its attempts, and its
//! `max_attempts` count again from them; it gets its batch's next places in the fair
//! queue, as a submission would, in id order.

use std::collections::BTreeMap;

use super::*;
use crate::store::{BulkCancel, TaskSelect};

/// Whether `select` names `task`.
pub fn selects(select: &TaskSelect, task: &Task) -> bool {
    select.task.is_none_or(|id| id == task.id)
        && select.batch.is_none_or(|batch| batch == task.batch)
        && select
            .group
            .as_ref()
            .is_none_or(|group| task.group.as_ref() == Some(group))
        && (select.outcomes.is_empty()
            || task.outcome.is_some_and(|o| select.outcomes.contains(&o)))
}

impl Model {
    /// Runs the failed and cancelled tasks `select` names again; returns how many. All or
    /// none: refused when they would pass a tenant's open limit.
    pub fn retry(&mut self, select: &TaskSelect) -> Result<u64, Refused> {
        let vtime = self.vtime;
        let chosen: Vec<(TaskId, BatchId)> = self
            .tasks
            .iter()
            .filter(|t| matches!(t.phase, Phase::Failed | Phase::Cancelled))
            .filter(|t| selects(select, t))
            .map(|t| (t.id, t.batch))
            .collect();
        let mut adds = BTreeMap::new();
        for (_, batch) in &chosen {
            if let Some(tenant) = self.batches[batch].tenant {
                *adds.entry(tenant).or_default() += 1;
            }
        }
        self.check_open(&adds)?;
        for &(id, batch) in &chosen {
            let b = self.batches.get_mut(&batch).expect("a task's batch exists");
            let vseq = b.next_vseq.max(vtime);
            b.next_vseq = vseq + 1;
            let task = self.task_mut(id).expect("a chosen task exists");
            task.phase = Phase::Pending;
            task.vseq = vseq;
            task.not_before = 0;
            // Its deferrals stay counted on top of its max attempts.
            task.redriven_after = task.attempts - task.deferrals;
            task.cancel_requested = false;
        }
        let ids: Vec<TaskId> = chosen.iter().map(|&(id, _)| id).collect();
        self.wait_again(&ids);
        Ok(chosen.len() as u64)
    }

    /// Cancels the pending tasks `select` names, and asks for its claimed ones to be
    /// stopped.
    pub fn cancel_where(&mut self, select: &TaskSelect) -> BulkCancel {
        let mut result = BulkCancel::default();
        let mut cancelled = Vec::new();
        for task in self.tasks.iter_mut().filter(|t| selects(select, t)) {
            match task.phase {
                Phase::Pending => {
                    task.phase = Phase::Cancelled;
                    task.outcome = Some(Outcome::Cancelled);
                    cancelled.push(task.id);
                    result.cancelled += 1;
                }
                Phase::Claimed => {
                    task.cancel_requested = true;
                    result.stopping += 1;
                }
                _ => {}
            }
        }
        for id in cancelled {
            self.settle(id);
        }
        result
    }

    /// Sets the priority of the tasks `select` names that have not started; returns how
    /// many changed.
    pub fn set_priority_where(&mut self, select: &TaskSelect, priority: i32) -> u64 {
        let mut changed = 0;
        for task in self.tasks.iter_mut() {
            if selects(select, task) && not_started(task) {
                task.priority = priority;
                changed += 1;
            }
        }
        changed
    }
}
