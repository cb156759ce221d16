//! A standing claim: what the claim loop leaves with the writer while it sleeps.
//!
//! Most changes that make work claimable for a node are its own ends: a gate opens, a
//! dependency ends, a group frees a slot, a slot frees. Rather than be woken to claim in a
//! transaction of its own once the writer has recorded them, the claim loop leaves its
//! claim here, and the writer claims in the transaction that records the ends (on a store
//! that [claims in reports](crate::store::Store::claims_in_reports)): a task they made
//! ready is claimed, and started, one transaction sooner.
//!
//! The writer takes the claim when the room its ends left is worth a claim by the claim
//! loop's own rule ([`worth_claiming`]), and answers with what it claimed. A claim loop
//! woken by anything else withdraws it first; one the writer already took, it waits for.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::store::Claimed;

/// What the writer claimed for the claim loop.
pub(super) struct Answer {
    /// How many tasks it asked for.
    pub max: usize,
    pub claimed: Claimed,
    /// The writes the claim saw ([`super::writes::Writes::count`]).
    pub seen: u64,
}

pub(super) struct Standing {
    /// A std mutex: held for a put or a take, never across an await.
    ask: Mutex<Option<Ask>>,
    /// The node's tasks reserved or running.
    busy: Arc<AtomicUsize>,
}

/// The claim loop's claim, while it sleeps: as much as the room within `capacity`, for
/// `workers` slots.
struct Ask {
    capacity: usize,
    workers: usize,
    reply: oneshot::Sender<Answer>,
}

/// A claim the writer took: at most `max` tasks, answered on `reply`, in a write made
/// after `seen` writes.
pub(super) struct Taken {
    pub max: usize,
    pub reply: oneshot::Sender<Answer>,
    pub seen: u64,
}

/// Whether `room` left of `capacity` is worth a claim now: claims come in large batches,
/// once half the capacity is free, unless `workers` slots would otherwise go idle with
/// `holding` tasks reserved or running.
pub(super) fn worth_claiming(room: usize, capacity: usize, holding: usize, workers: usize) -> bool {
    room > 0 && (holding < workers || room >= capacity / 2)
}

impl Standing {
    pub(super) fn new(busy: Arc<AtomicUsize>) -> Standing {
        Standing {
            ask: Mutex::new(None),
            busy,
        }
    }

    /// Leaves a claim within `capacity` for `workers` slots with the writer; the answer
    /// comes on the receiver. Its sender dropped unanswered means nothing was claimed.
    pub(super) fn park(&self, capacity: usize, workers: usize) -> oneshot::Receiver<Answer> {
        let (reply, answer) = oneshot::channel();
        let ask = Ask {
            capacity,
            workers,
            reply,
        };
        *self.ask.lock().expect("standing claim lock") = Some(ask);
        answer
    }

    /// Takes the claim back; false when the writer has taken it, and answers it.
    pub(super) fn withdraw(&self) -> bool {
        self.ask
            .lock()
            .expect("standing claim lock")
            .take()
            .is_some()
    }

    /// The writer takes the claim, if one stands and the room is worth claiming now, for
    /// a write made after `seen` writes.
    pub(super) fn take(&self, seen: u64) -> Option<Taken> {
        let mut ask = self.ask.lock().expect("standing claim lock");
        let Ask {
            capacity, workers, ..
        } = *ask.as_ref()?;
        let holding = self.busy.load(Ordering::Relaxed);
        let room = capacity.saturating_sub(holding);
        if !worth_claiming(room, capacity, holding, workers) {
            return None;
        }
        ask.take().map(|ask| Taken {
            max: room,
            reply: ask.reply,
            seen,
        })
    }
}
