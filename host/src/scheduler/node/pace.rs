//! How far ahead of its slots a node claims.
//!
//! A claim is a round trip to the store, and a slot that frees waits for the next claim
//! unless work is already held for it. A node holds beyond its free slots only the work
//! that keeps its slots busy through its claims' round trips ([`Pace::ahead`]): for tasks
//! of microseconds, thousands. For tasks much longer than a claim it holds one task for
//! each run expected to end within two claims ([`Pace::outlook`]), and gives it back when
//! that run goes on past its expected end, so that a node never sits for long on work
//! another node's idle slot could start. Before any run has ended it holds none.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::store::Micros;

/// Moving averages of how long runs and claims take on this node.
#[derive(Default)]
pub(crate) struct Pace {
    /// Nanoseconds; 0 until the first run ends.
    run_nanos: AtomicU64,
    /// Nanoseconds a claim takes, from asking to having the tasks.
    claim_nanos: AtomicU64,
}

impl Pace {
    pub(super) fn ran(&self, took: Duration) {
        average_in(&self.run_nanos, took);
    }

    pub(super) fn claimed(&self, took: Duration) {
        average_in(&self.claim_nanos, took);
    }

    /// Tasks to hold beyond the free slots: enough for `workers` slots to stay busy
    /// through two claim round trips (the claim loop claims again once half of what it
    /// may hold is free, so the other half must last through the claim), at most `max`;
    /// none until a run has ended, and none for runs longer than two claims (see
    /// [`Pace::outlook`]).
    pub(super) fn ahead(&self, workers: usize, max: usize) -> usize {
        let run = self.run_nanos.load(Ordering::Relaxed);
        if run == 0 {
            return 0;
        }
        let claim = self.claim_nanos.load(Ordering::Relaxed);
        let per_slot = usize::try_from(2 * claim / run).unwrap_or(usize::MAX);
        per_slot.saturating_mul(workers).min(max)
    }

    /// Whether runs are long enough that the node holds work by [`Pace::outlook`] rather
    /// than by [`Pace::ahead`].
    pub(super) fn by_outlook(&self, workers: usize, max: usize) -> bool {
        max > 0 && self.ahead(workers, max) == 0
    }

    /// How long before a run's expected end to claim the task that follows it: two
    /// claims, and a millisecond for the timer that wakes the claim loop, which rounds up
    /// to the millisecond.
    fn lead(&self) -> Micros {
        let claim = self.claim_nanos.load(Ordering::Relaxed) / 1000;
        i64::try_from(2 * claim).unwrap_or(i64::MAX / 2) + 1000
    }

    /// For runs that began at `starts`: how many are expected to end within [`Pace::lead`]
    /// of `now` (a run already past its expected end by more than that is not counted: it
    /// may go on for long), and when the next one will be.
    pub(super) fn outlook(&self, starts: impl IntoIterator<Item = Micros>, now: Micros) -> Outlook {
        let mut outlook = Outlook::default();
        let run = i64::try_from(self.run_nanos.load(Ordering::Relaxed) / 1000).unwrap_or(0);
        if run == 0 {
            return outlook;
        }
        let lead = self.lead();
        for start in starts {
            let end = start.saturating_add(run);
            if now > end.saturating_add(lead) {
                continue;
            }
            if now >= end - lead {
                outlook.ending += 1;
            } else {
                let at = end - lead;
                outlook.next = Some(outlook.next.map_or(at, |next: Micros| next.min(at)));
            }
        }
        outlook
    }
}

/// Runs of this node as the claim loop sees them ahead.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Outlook {
    /// Runs expected to end within a claim's lead: each may have its follower claimed.
    pub ending: usize,
    /// When the next run comes within that lead.
    pub next: Option<Micros>,
}

/// Folds `took` into a moving average of nanoseconds (0: none yet).
fn average_in(average: &AtomicU64, took: Duration) {
    let took = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1);
    // Races between runs lose an update now and then; the average stays close.
    let old = average.load(Ordering::Relaxed);
    let new = if old == 0 {
        took
    } else {
        old - old / 16 + took / 16
    };
    average.store(new.max(1), Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_ahead_only_what_claims_would_leave_idle() {
        let pace = Pace::default();
        pace.claimed(Duration::from_millis(1));
        assert_eq!(pace.ahead(2, 4096), 0, "none before any run has ended");
        pace.ran(Duration::from_micros(10));
        assert_eq!(pace.ahead(2, 4096), 400, "two claims' worth for each slot");
        assert_eq!(pace.ahead(2, 100), 100, "capped");
        let pace = Pace::default();
        pace.claimed(Duration::from_millis(1));
        pace.ran(Duration::from_millis(800));
        assert_eq!(
            pace.ahead(6, 4096),
            0,
            "none for runs much longer than a claim"
        );
    }

    #[test]
    fn follows_are_claimed_for_runs_near_their_end_only() {
        let pace = Pace::default();
        pace.claimed(Duration::from_millis(2));
        assert_eq!(pace.outlook([0], 0), Outlook::default(), "no run has ended");
        pace.ran(Duration::from_millis(50));
        assert!(pace.by_outlook(2, 4096));
        // Lead: two claims and the timer's millisecond.
        assert_eq!(pace.lead(), 5_000);
        let now = 100_000;
        let outlook = pace.outlook(
            [
                now - 46_000, // ends in 4 ms: within the lead
                now - 10_000, // ends in 40 ms: its follower is claimed 5 ms before
                now - 54_000, // 4 ms past its expected end: still counted
                now - 56_000, // 6 ms past: may run long, its follower waits for its end
            ],
            now,
        );
        assert_eq!(
            outlook,
            Outlook {
                ending: 2,
                next: Some(now + 35_000)
            }
        );
        assert!(!pace.by_outlook(2, 0), "claiming ahead turned off");
    }

    #[test]
    fn the_pace_follows_a_change_of_run_times() {
        let pace = Pace::default();
        pace.claimed(Duration::from_millis(10));
        pace.ran(Duration::from_micros(10));
        for _ in 0..100 {
            pace.ran(Duration::from_millis(10));
        }
        assert_eq!(pace.ahead(1, 4096), 2);
    }
}
