//! The claim loop: claims tasks for this node's slots, and for a few more, and holds them
//! `reserved` until the starter runs them.
//!
//! How far ahead to claim: a claim is a round trip to the store, and a slot that frees
//! waits for the next claim unless work is already held for it. A node holds beyond its
//! free slots only the work that keeps its slots busy through its claims' round trips
//! ([`Pace::ahead`]): for tasks of microseconds, thousands; for tasks much longer than a
//! claim, none, so that a node never sits on work another node's idle slot could start.
//! Before any run has ended it holds none. What it holds is `reserved`, not running, and
//! goes back to the queue when priorities or limits change ([`Signal::Reclaim`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use super::Ctx;
use super::writer::COMPLETION_BATCH;
use crate::scheduler::LocalRun;
use crate::store::*;

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

    fn claimed(&self, took: Duration) {
        average_in(&self.claim_nanos, took);
    }

    /// Tasks to hold beyond the free slots: enough for `workers` slots to stay busy
    /// through two claim round trips (the claim loop claims again once half of what it
    /// may hold is free, so the other half must last through the claim), at most `max`;
    /// none until a run has ended.
    fn ahead(&self, workers: usize, max: usize) -> usize {
        let run = self.run_nanos.load(Ordering::Relaxed);
        if run == 0 {
            return 0;
        }
        let claim = self.claim_nanos.load(Ordering::Relaxed);
        let per_slot = usize::try_from(2 * claim / run).unwrap_or(usize::MAX);
        per_slot.saturating_mul(workers).min(max)
    }
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

/// Claims while there is room, then sleeps until woken or until a retry is due. Returns
/// once `stop` is cancelled, or with the store's error.
pub(super) async fn claim_loop(ctx: &Arc<Ctx>, stop: &CancellationToken) -> anyhow::Result<()> {
    let scheduler = &ctx.scheduler;
    let config = &scheduler.config;
    let workers = scheduler.runtime.config().workers;
    // After a claim that passed over tasks other transactions held, claim again after
    // this pause (doubling while it lasts) instead of waiting for a wake-up.
    const FIRST_RETRY: Duration = Duration::from_millis(1);
    let mut contended: Option<Duration> = None;
    loop {
        if stop.is_cancelled() {
            return Ok(());
        }
        let capacity = workers + scheduler.pace.ahead(workers, config.prefetch);
        let holding = ctx.busy.load(Ordering::Relaxed);
        // Ends the writer has yet to record: past a full write of them, claim no more
        // until it catches up, so that a slow store bounds what waits in memory.
        let writing = ctx.held.borrow().saturating_sub(holding);
        let room = if writing >= COMPLETION_BATCH {
            0
        } else {
            capacity.saturating_sub(holding)
        };
        // Claim in large batches: wait until half the capacity is free, unless slots would
        // otherwise go idle.
        let worth_claiming = room > 0 && (holding < workers || room >= capacity / 2);
        let mut full = !worth_claiming;
        let mut next_due = None;
        // The same instant for the claim and for the next due time: a retry that became due
        // between the two would otherwise be neither claimed nor waited for.
        let now = now_micros();
        if worth_claiming {
            let asked = tokio::time::Instant::now();
            let claimed = scheduler
                .store
                .task_claim(ClaimParams {
                    node: config.node.clone(),
                    max: room,
                    now,
                    lease: config.lease,
                })
                .await
                .context("claiming tasks")?;
            scheduler.pace.claimed(asked.elapsed());
            contended = match contended {
                _ if !claimed.contended => None,
                None => Some(FIRST_RETRY),
                Some(pause) => Some((pause * 2).min(Duration::from_millis(50))),
            };
            next_due = claimed.next_due;
            let claimed = claimed.tasks;
            full = claimed.len() == room;
            if !claimed.is_empty() {
                ctx.held.send_modify(|n| *n += claimed.len());
                ctx.busy.fetch_add(claimed.len(), Ordering::Relaxed);
                let mut running = scheduler.running.lock().expect("running lock");
                for task in &claimed {
                    scheduler.metrics.claimed(task.id, task.claimed_at);
                    running.insert(
                        task.id,
                        LocalRun {
                            batch: task.batch,
                            cancel: CancellationToken::new(),
                            started: None,
                        },
                    );
                }
                drop(running);
                ctx.reserved.push(claimed);
            }
            if full {
                // More may be claimable once a completion frees room.
                tokio::task::yield_now().await;
            }
        }
        // Nothing more to claim now: sleep until woken or until a retry becomes due.
        let sleep = async {
            match (next_due, contended.filter(|_| !full)) {
                (_, Some(pause)) => tokio::time::sleep(pause).await,
                (Some(at), None) => tokio::time::sleep(micros_until(at)).await,
                (None, None) => std::future::pending().await,
            }
        };
        tokio::select! {
            () = scheduler.wake.notified() => {}
            () = sleep => {}
            () = stop.cancelled() => return Ok(()),
        }
    }
}

fn micros_until(at: Micros) -> Duration {
    Duration::from_micros(u64::try_from(at - now_micros()).unwrap_or(0))
}

/// Hands back what is reserved when priorities or limits change, so that the next claim
/// takes what the rules name now.
pub(super) async fn reclaim_on_change(ctx: Arc<Ctx>, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = ctx.scheduler.reclaim.notified() => {}
            () = stop.cancelled() => return,
        }
        let reserved = ctx.reserved.take_all();
        if reserved.is_empty() {
            // A limit raised may have made work claimable.
            ctx.scheduler.wake.notify_one();
        }
        // The writer wakes the claim loop once they are back in the queue.
        ctx.give_back(reserved);
    }
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
