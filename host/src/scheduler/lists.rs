//! Lists of batches and tasks as callers see them: who may list what, which modules a
//! module reference names, what each pending task waits on, and where the next page
//! starts.

use std::collections::HashMap;

use super::rules::{WaitingOn, waiting_on};
use super::{Access, Error, Result, Scheduler, module_ref};
use crate::store::*;

/// A page of tasks, each pending one with what it waits on.
#[derive(Debug, Clone)]
pub struct TaskList {
    pub tasks: Vec<(TaskInfo, Option<WaitingOn>)>,
    pub next: Option<Position>,
    pub counts: Progress,
    pub counts_capped: bool,
}

impl Scheduler {
    /// A page of the batches `filter` names, newest first, and where the next starts. A
    /// handle lists its own batch only; a tenant its own batches.
    pub async fn batch_list(
        &self,
        access: &Access,
        mut filter: BatchFilter,
    ) -> Result<(Vec<BatchInfo>, Option<Position>)> {
        match access {
            // A tenant lists its own batches: all of them when it names none.
            Access::Tenant(tenant) if filter.batch.is_none() => filter.tenant = Some(*tenant),
            _ => filter.batch = self.confine(access, filter.batch).await?,
        }
        let limit = filter.limit;
        let mut rows = self.store.batch_list(filter).await?;
        let next = next_position(&mut rows, limit, |b| Position {
            at: b.created_at,
            id: b.id,
        });
        Ok((rows, next))
    }

    /// A page of the tasks `filter` names (and the module `module` names: its name, digest
    /// or the start of its digest), newest first. A handle lists its own batch's only.
    pub async fn task_list(
        &self,
        access: &Access,
        mut filter: TaskFilter,
        module: Option<&str>,
    ) -> Result<TaskList> {
        filter.batch = self.confine(access, filter.batch).await?;
        if let Some(reference) = module {
            filter.modules = self.modules_named(reference).await?;
        }
        let limit = filter.limit;
        let now = filter.now;
        let mut page = self.store.task_list(filter).await?;
        let next = next_position(&mut page.tasks, limit, |t| Position {
            at: t.submitted_at,
            id: t.id,
        });
        let mut waiting = self.waiting_on(&page.tasks, now).await?;
        Ok(TaskList {
            tasks: page
                .tasks
                .into_iter()
                .map(|t| {
                    let on = waiting.remove(&t.id);
                    (t, on)
                })
                .collect(),
            next,
            counts: page.counts,
            counts_capped: page.counts_capped,
        })
    }

    /// What each pending task of `tasks` waits on at `now`; tasks a node may claim now, and
    /// those not pending, are left out.
    pub async fn waiting_on(
        &self,
        tasks: &[TaskInfo],
        now: Micros,
    ) -> Result<HashMap<TaskId, WaitingOn>> {
        let pending: Vec<TaskId> = tasks
            .iter()
            .filter(|t| {
                matches!(
                    t.state,
                    TaskState::Waiting | TaskState::Ready | TaskState::Held
                )
            })
            .map(|t| t.id)
            .collect();
        if pending.is_empty() {
            return Ok(HashMap::new());
        }
        let facts = self.store.task_hold(pending).await?;
        Ok(facts
            .iter()
            .filter_map(|f| Some((f.task, waiting_on(f, now)?)))
            .collect())
    }

    /// The digest a module reference names, as the one entry of a filter; a reference that
    /// names none is not found.
    pub(crate) async fn modules_named(
        &self,
        reference: &str,
    ) -> Result<Vec<crate::runtime::Digest>> {
        let modules = self.store.module_list().await?;
        match module_ref::find(reference, &modules) {
            Ok(named) => Ok(vec![named.digest()]),
            Err(message) => Err(Error::NotFound(format!("parameter `module`: {message}"))),
        }
    }
}
