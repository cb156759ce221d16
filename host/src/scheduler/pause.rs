//! Pauses and limits changed after the fact: a group or a batch paused and resumed, a
//! batch's `max_parallel` changed (a group's limit is set in `mod.rs`).
//!
//! A pause holds every task of the batch or group that has not started: pending ones are
//! `held`, and reserved ones go back from the nodes holding them (`Reclaim`), to be held
//! too. Tasks running on a slot run on. A resume lets them be claimed again, in the order
//! they had.

use super::{Access, Result, Scheduler, check_group_key};
use crate::store::*;

impl Scheduler {
    /// Pauses or resumes a group, keeping its limit.
    pub async fn group_set_paused(&self, key: String, paused: bool) -> Result<GroupInfo> {
        check_group_key(&key)?;
        self.store.group_set_paused(key.clone(), paused).await?;
        self.after_limit_change(paused);
        Ok(self.store.group_get(key).await?)
    }

    /// Pauses or resumes a batch, keeping its `max_parallel`.
    pub async fn batch_set_paused(
        &self,
        access: &Access,
        batch: BatchId,
        paused: bool,
    ) -> Result<BatchInfo> {
        self.authorize(access, batch).await?;
        self.store.batch_set_paused(batch, paused).await?;
        self.after_limit_change(paused);
        Ok(self.store.batch_get(batch).await?)
    }

    /// Sets a batch's `max_parallel` (`None`: no limit; 0 holds its tasks, as a pause
    /// does); a paused batch gets it when resumed.
    pub async fn batch_set_max_parallel(
        &self,
        access: &Access,
        batch: BatchId,
        max_parallel: Option<u32>,
    ) -> Result<BatchInfo> {
        self.authorize(access, batch).await?;
        self.store
            .batch_set_max_parallel(batch, max_parallel)
            .await?;
        // A lower limit reaches reserved tasks; a higher one may make work claimable.
        self.after_limit_change(true);
        Ok(self.store.batch_get(batch).await?)
    }

    /// Tells this node's claim loop: a limit that went down reaches the tasks it reserved
    /// (`lowered`), one that went up may make work claimable.
    fn after_limit_change(&self, lowered: bool) {
        if lowered {
            self.reclaim.notify_one();
        } else {
            self.wake.notify_one();
        }
    }
}
