//! The tasks a node has claimed and not yet started, in claim order. The node starts them
//! first come, first served as its slots free, so that its claims' order is the order in
//! which tasks start; it hands them back when a change of priorities or limits may rank
//! other work before them, when they are cancelled, and when it stops.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::sync::Notify;

use crate::store::{ClaimedTask, TaskId};

#[derive(Default)]
pub(crate) struct Reserved {
    /// A std mutex: held for a push or a pop, never across an await.
    queue: Mutex<VecDeque<ClaimedTask>>,
    added: Notify,
}

impl Reserved {
    /// Appends claimed tasks, in the order of the claim.
    pub(crate) fn push(&self, tasks: impl IntoIterator<Item = ClaimedTask>) {
        self.queue.lock().expect("reserved lock").extend(tasks);
        self.added.notify_waiters();
    }

    /// The task to start next, if any is reserved.
    pub(crate) fn pop(&self) -> Option<ClaimedTask> {
        self.queue.lock().expect("reserved lock").pop_front()
    }

    /// Removes every reserved task.
    pub(crate) fn take_all(&self) -> Vec<ClaimedTask> {
        self.queue
            .lock()
            .expect("reserved lock")
            .drain(..)
            .collect()
    }

    /// Removes up to `n` tasks, the last claimed first.
    pub(crate) fn take_last(&self, n: usize) -> Vec<ClaimedTask> {
        let mut queue = self.queue.lock().expect("reserved lock");
        let keep = queue.len().saturating_sub(n);
        queue.drain(keep..).collect()
    }

    /// Removes the reserved tasks among `ids`.
    pub(crate) fn take(&self, ids: &[TaskId]) -> Vec<ClaimedTask> {
        let mut queue = self.queue.lock().expect("reserved lock");
        let mut taken = Vec::new();
        queue.retain(|t| {
            let hit = ids.contains(&t.id);
            if hit {
                taken.push(t.clone());
            }
            !hit
        });
        taken
    }

    pub(crate) fn len(&self) -> usize {
        self.queue.lock().expect("reserved lock").len()
    }

    /// Returns once a task is reserved.
    pub(crate) async fn wait(&self) {
        loop {
            let added = self.added.notified();
            tokio::pin!(added);
            // Registered before the check, so a push in between is not missed.
            added.as_mut().enable();
            if self.len() > 0 {
                return;
            }
            added.await;
        }
    }
}
