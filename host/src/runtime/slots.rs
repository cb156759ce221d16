//! The instance slots: a fixed number of them bounds how many tasks execute at once, and
//! each run holds one, named by its number in the execution log.

use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The instance slots: a semaphore bounds how many tasks run, and a free list names the
/// slot each one runs in, for the execution log.
pub(super) struct SlotPool {
    permits: Arc<Semaphore>,
    free: Arc<Mutex<Vec<usize>>>,
}

/// A slot held for one run: at most `workers` exist at once. Dropping it frees the slot.
pub struct Slot {
    index: usize,
    free: Arc<Mutex<Vec<usize>>>,
    _permit: OwnedSemaphorePermit,
}

impl SlotPool {
    pub(super) fn new(slots: usize) -> Self {
        SlotPool {
            permits: Arc::new(Semaphore::new(slots)),
            free: Arc::new(Mutex::new((0..slots).rev().collect())),
        }
    }

    /// Slots no run holds now.
    pub(super) fn free(&self) -> usize {
        self.permits.available_permits()
    }

    pub(super) async fn acquire(&self) -> Slot {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("the slot semaphore is never closed");
        let index = self
            .free
            .lock()
            .expect("slot lock")
            .pop()
            .expect("a permit always has a free slot");
        Slot {
            index,
            free: self.free.clone(),
            _permit: permit,
        }
    }
}

impl Slot {
    /// The slot's number, `0..workers`, as the execution log names it.
    pub fn index(&self) -> usize {
        self.index
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // Runs before the permit is released, so the next holder finds this index free.
        self.free.lock().expect("slot lock").push(self.index);
    }
}
