//! Dependency edges on the [`Model`]: a task runs after the tasks it names, each of the
//! same batch and of an order no higher than its own. It waits for those not ended; when
//! one ends well (succeeded, or skipped) or with the policy `run`, it waits for it no
//! more; when one ends otherwise, the policy `cancel` cancels it and `skip` skips it
//! (cancelled, with outcome `skipped`), and so on along its own edges. A re-driven task
//! waits again for those of its dependencies not ended, and so do its dependents still
//! pending: for it, and for every other dependency of theirs not ended (a parent handed
//! back before it suspended waits for its open children too).

use super::*;
use crate::store::OnFailure;

impl Model {
    /// The stored tasks and earlier ones each of `new` runs after, checked: of the batch,
    /// and of an order no higher.
    pub(super) fn resolve(
        &self,
        batch: BatchId,
        new: &[NewTask],
    ) -> Result<Vec<Vec<(NewDep, OnFailure)>>, Refused> {
        let mut deps = Vec::with_capacity(new.len());
        for (index, task) in new.iter().enumerate() {
            for &(dep, _) in &task.after {
                let order = match dep {
                    NewDep::Earlier(at) if at < index => new[at].order,
                    NewDep::Earlier(_) => return Err(Refused::UnknownDep { index }),
                    NewDep::Stored(id) => match self.task(id) {
                        Some(t) if t.batch == batch => t.order,
                        _ => return Err(Refused::UnknownDep { index }),
                    },
                };
                if order > task.order {
                    return Err(Refused::DepAbove { index });
                }
            }
            deps.push(task.after.clone());
        }
        Ok(deps)
    }

    /// Gives the tasks just submitted as `ids` their edges; those to a task that has ended
    /// are settled at once, as its end would have.
    pub(super) fn add_edges(&mut self, ids: &[TaskId], deps: Vec<Vec<(NewDep, OnFailure)>>) {
        let mut ended = Vec::new();
        for (&id, deps) in ids.iter().zip(deps) {
            let after: Vec<(TaskId, OnFailure)> = deps
                .into_iter()
                .map(|(dep, policy)| match dep {
                    NewDep::Earlier(at) => (ids[at], policy),
                    NewDep::Stored(dep) => (dep, policy),
                })
                .collect();
            for &(dep, _) in &after {
                if self.task(dep).is_some_and(|d| d.phase.is_ended()) {
                    ended.push(dep);
                }
            }
            let task = self.task_mut(id).expect("just submitted");
            task.waits = after.iter().map(|&(dep, _)| dep).collect();
            task.after = after;
        }
        ended.sort_unstable();
        ended.dedup();
        for dep in ended {
            self.settle(dep);
        }
    }

    /// Settles the edges from `dep`, which has just ended, along the tasks that end
    /// because of it.
    pub(super) fn settle(&mut self, dep: TaskId) {
        let mut work = vec![dep];
        while let Some(dep) = work.pop() {
            let well = self.task(dep).is_some_and(|d| {
                d.phase == Phase::Succeeded || d.outcome == Some(Outcome::Skipped)
            });
            for task in self.tasks.iter_mut() {
                if task.phase != Phase::Pending || !task.waits.contains(&dep) {
                    continue;
                }
                let policy = task
                    .after
                    .iter()
                    .find(|&&(d, _)| d == dep)
                    .map(|&(_, p)| p)
                    .expect("a task waits only for what it runs after");
                if well || policy == OnFailure::Run {
                    task.waits.remove(&dep);
                    continue;
                }
                task.phase = Phase::Cancelled;
                task.outcome = Some(match policy {
                    OnFailure::Skip => Outcome::Skipped,
                    _ => Outcome::Cancelled,
                });
                task.waits.clear();
                work.push(task.id);
            }
        }
    }

    /// Tasks run again (`redriven`), and the pending tasks after them, wait for their
    /// dependencies not ended.
    pub(super) fn wait_again(&mut self, redriven: &[TaskId]) {
        let dependents: Vec<TaskId> = self
            .tasks
            .iter()
            .filter(|t| {
                t.phase == Phase::Pending && t.after.iter().any(|(d, _)| redriven.contains(d))
            })
            .map(|t| t.id)
            .collect();
        for id in redriven.iter().copied().chain(dependents) {
            let open = self.open_deps(id);
            self.task_mut(id).expect("a re-driven task exists").waits = open;
        }
    }

    /// The tasks `id` runs after that have not ended.
    pub(super) fn open_deps(&self, id: TaskId) -> BTreeSet<TaskId> {
        self.task(id)
            .map(|task| {
                task.after
                    .iter()
                    .map(|&(dep, _)| dep)
                    .filter(|&dep| self.task(dep).is_some_and(|d| !d.phase.is_ended()))
                    .collect()
            })
            .unwrap_or_default()
    }
}
