//! Pauses and limits changed after the fact, on the [`Model`]: a paused batch or group
//! keeps its limit for when it is resumed, and claims none of its tasks meanwhile; its
//! tasks keep their places in the queue. Nothing here moves a task: a node holding
//! reserved tasks hands them back, and the next claim applies the limits.

use super::*;

impl Model {
    /// Sets a group's limit (0 holds its tasks); a paused group gets it when resumed.
    pub fn set_group_limit(&mut self, key: &str, limit: u32) {
        self.groups.insert(key.to_owned(), limit);
    }

    /// Pauses or resumes a group, which the store then knows (with the default limit if
    /// it had none).
    pub fn set_group_paused(&mut self, key: &str, paused: bool) {
        self.groups
            .entry(key.to_owned())
            .or_insert(DEFAULT_GROUP_LIMIT);
        if paused {
            self.paused_groups.insert(key.to_owned());
        } else {
            self.paused_groups.remove(key);
        }
    }

    /// Pauses or resumes a batch; `false` when there is no such batch.
    pub fn set_batch_paused(&mut self, batch: BatchId, paused: bool) -> bool {
        match self.batches.get_mut(&batch) {
            Some(b) => {
                b.paused = paused;
                true
            }
            None => false,
        }
    }

    /// Sets a batch's `max_parallel` (0 holds its tasks); a paused batch gets it when
    /// resumed. `false` when there is no such batch.
    pub fn set_batch_max_parallel(&mut self, batch: BatchId, max_parallel: Option<u32>) -> bool {
        match self.batches.get_mut(&batch) {
            Some(b) => {
                b.max_parallel = max_parallel;
                true
            }
            None => false,
        }
    }
}
