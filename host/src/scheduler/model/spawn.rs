//! Children and suspensions on the [`Model`]: a claimed task submits a child into its
//! batch, at its own order, of a priority no higher than its own, after siblings only;
//! the child gets an edge to its parent with the policy `run`. The same key from the same
//! parent names the same child. A suspended attempt puts its task back to wait for every
//! child not ended, its attempt given back.

use super::*;

/// Why a spawn was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpawnRefused {
    /// The parent is not claimed.
    NotRunning,
    /// The child's priority is above its parent's.
    AbovePriority,
    /// The child runs after a task that is not a child of its parent.
    NotASibling,
    /// The submission itself was refused.
    Submit(Refused),
}

impl Model {
    /// Submits a child of `parent` named `key` (see the module's doc); returns its id, the
    /// existing one's for a key given before.
    pub fn spawn(
        &mut self,
        parent: TaskId,
        key: &str,
        priority: Option<i32>,
        after: &[TaskId],
    ) -> Result<TaskId, SpawnRefused> {
        if let Some(&id) = self.children.get(&(parent, key.to_owned())) {
            return Ok(id);
        }
        let p = self.task(parent).ok_or(SpawnRefused::NotRunning)?;
        if p.phase != Phase::Claimed {
            return Err(SpawnRefused::NotRunning);
        }
        let priority = priority.unwrap_or(p.priority);
        if priority > p.priority {
            return Err(SpawnRefused::AbovePriority);
        }
        if after.iter().any(|sib| {
            !self
                .children
                .iter()
                .any(|((of, _), id)| *of == parent && id == sib)
        }) {
            return Err(SpawnRefused::NotASibling);
        }
        let new = NewTask {
            order: p.order,
            group: None,
            priority: Some(priority),
            max_attempts: 1,
            not_before: None,
            after: after
                .iter()
                .map(|&sib| (NewDep::Stored(sib), OnFailure::Run))
                .collect(),
            cost: 1,
        };
        let batch = p.batch;
        let id = self.submit(batch, &[new]).map_err(SpawnRefused::Submit)?[0];
        self.children.insert((parent, key.to_owned()), id);
        let parent = self.task_mut(parent).expect("checked above");
        parent.after.push((id, OnFailure::Run));
        Ok(id)
    }

    /// A claimed task's attempt suspended: it waits for its children not ended, and its
    /// attempt is given back.
    pub(super) fn suspend(&mut self, id: TaskId) {
        let open = self.open_deps(id);
        let task = self.task_mut(id).expect("a suspended task exists");
        task.waits = open;
        task.max_attempts += 1;
        task.phase = Phase::Pending;
        task.outcome = Some(Outcome::Suspended);
    }
}
