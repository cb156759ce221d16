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
//! loop's own rule ([`worth_claiming`]), and answers with what it claimed. A claim that
//! found nothing, and no time to wake at, stands on for the next write: the claim loop
//! sleeps through the writes that make nothing claimable (the ends of a graph's wide step
//! before its last), and the claim is there for the write that does. A claim loop woken
//! by anything else withdraws the claim first; one the writer already took, it waits for.

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
    parked: Mutex<Parked>,
    /// The node's tasks reserved or running.
    busy: Arc<AtomicUsize>,
}

#[derive(Default)]
struct Parked {
    ask: Option<Ask>,
    /// The claim loop asked for the claim back while the writer held it: the writer
    /// answers it, even with nothing, rather than leave it standing.
    wanted_back: bool,
}

/// The claim loop's claim, while it sleeps: as much as the room within `capacity`, for
/// `workers` slots.
struct Ask {
    capacity: usize,
    workers: usize,
    /// Whether the claim may stand on after it found nothing: not when `capacity` counts
    /// runs expected to end soon, which a later write's claim must not count again.
    stands_on: bool,
    reply: oneshot::Sender<Answer>,
}

/// A claim the writer took: at most `max` tasks, in a write made after `seen` writes;
/// answered with [`Standing::answer`].
pub(super) struct Taken {
    pub max: usize,
    pub seen: u64,
    ask: Ask,
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
            parked: Mutex::default(),
            busy,
        }
    }

    /// Leaves a claim within `capacity` for `workers` slots with the writer, which may
    /// stand on after it found nothing if `stands_on`; the answer comes on the receiver.
    /// Its sender dropped unanswered means nothing was claimed.
    pub(super) fn park(
        &self,
        capacity: usize,
        workers: usize,
        stands_on: bool,
    ) -> oneshot::Receiver<Answer> {
        let (reply, answer) = oneshot::channel();
        let ask = Ask {
            capacity,
            workers,
            stands_on,
            reply,
        };
        *self.parked.lock().expect("standing claim lock") = Parked {
            ask: Some(ask),
            wanted_back: false,
        };
        answer
    }

    /// Takes the claim back; false when the writer has taken it, and answers it.
    pub(super) fn withdraw(&self) -> bool {
        let mut parked = self.parked.lock().expect("standing claim lock");
        let withdrawn = parked.ask.take().is_some();
        parked.wanted_back = !withdrawn;
        withdrawn
    }

    /// The writer takes the claim, if one stands and the room is worth claiming now, for
    /// a write made after `seen` writes.
    pub(super) fn take(&self, seen: u64) -> Option<Taken> {
        let mut parked = self.parked.lock().expect("standing claim lock");
        let Ask {
            capacity, workers, ..
        } = *parked.ask.as_ref()?;
        let holding = self.busy.load(Ordering::Relaxed);
        let room = capacity.saturating_sub(holding);
        if !worth_claiming(room, capacity, holding, workers) {
            return None;
        }
        parked.ask.take().map(|ask| Taken {
            max: room,
            seen,
            ask,
        })
    }

    /// The writer answers a claim it took with what it `claimed`; or, when that is
    /// nothing and the claim loop neither waits for it nor has a time to wake at, leaves
    /// the claim standing. Returns what it claimed for a claim loop that no longer waits.
    pub(super) fn answer(&self, taken: Taken, claimed: Claimed) -> Result<(), Claimed> {
        let Taken { max, seen, ask } = taken;
        let found_nothing =
            claimed.tasks.is_empty() && claimed.next_due.is_none() && !claimed.contended;
        if found_nothing && ask.stands_on {
            let mut parked = self.parked.lock().expect("standing claim lock");
            if !parked.wanted_back && !ask.reply.is_closed() {
                parked.ask = Some(ask);
                return Ok(());
            }
        }
        let answer = Answer { max, claimed, seen };
        ask.reply.send(answer).map_err(|unwanted| unwanted.claimed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nothing() -> Claimed {
        Claimed {
            tasks: Vec::new(),
            contended: false,
            next_due: None,
        }
    }

    fn standing() -> Standing {
        Standing::new(Arc::new(AtomicUsize::new(0)))
    }

    #[test]
    fn a_claim_that_found_nothing_stands_on_for_the_next_write() {
        let standing = standing();
        let mut answer = standing.park(8, 2, true);
        let taken = standing.take(1).expect("room for a claim");
        assert_eq!(taken.max, 8);
        assert!(standing.take(1).is_none(), "taken once");
        assert!(standing.answer(taken, nothing()).is_ok());
        assert!(answer.try_recv().is_err(), "the claim loop sleeps on");
        let taken = standing.take(2).expect("the claim stood on");
        let due = Claimed {
            next_due: Some(5),
            ..nothing()
        };
        assert!(standing.answer(taken, due).is_ok());
        let got = answer.try_recv().expect("a time to wake at is answered");
        assert_eq!((got.seen, got.claimed.next_due), (2, Some(5)));
    }

    #[test]
    fn a_claim_asked_back_while_the_writer_holds_it_is_answered() {
        let standing = standing();
        let mut answer = standing.park(8, 2, true);
        let taken = standing.take(1).expect("room for a claim");
        assert!(!standing.withdraw(), "the writer holds it");
        assert!(standing.answer(taken, nothing()).is_ok());
        let got = answer.try_recv().expect("answered, with nothing");
        assert!(got.claimed.tasks.is_empty());
        assert!(standing.take(2).is_none(), "nothing stands");
    }

    #[test]
    fn a_claim_counting_runs_near_their_end_is_answered_even_with_nothing() {
        let standing = standing();
        let mut answer = standing.park(8, 2, false);
        let taken = standing.take(1).expect("room for a claim");
        assert!(standing.answer(taken, nothing()).is_ok());
        assert!(answer.try_recv().is_ok());
        assert!(standing.take(2).is_none(), "nothing stands");
    }

    #[test]
    fn a_claim_for_a_loop_that_stopped_is_handed_back() {
        let standing = standing();
        let answer = standing.park(8, 2, true);
        let taken = standing.take(1).expect("room for a claim");
        drop(answer);
        assert!(standing.answer(taken, nothing()).is_err());
        assert!(standing.take(2).is_none(), "nothing stands");
    }
}
