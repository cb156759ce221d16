//! The claim loop: claims tasks for this node's slots, and for a few more, and holds them
//! `reserved` until the starter runs them.
//!
//! How far ahead to claim: a claim is a round trip to the store, and a slot that frees
//! waits for the next claim unless work is already held for it. A node holds beyond its
//! free slots only the work that keeps its slots busy through its claims' round trips
//! ([`Pace::ahead`]): for tasks of microseconds, thousands. For tasks much longer than a
//! claim it holds one task for each run expected to end within two claims
//! ([`Pace::outlook`]), and gives it back when that run goes on past its expected end, so
//! that a node never sits for long on work another node's idle slot could start. Before
//! any run has ended it holds none. What it holds is `reserved`, not running, and goes
//! back to the queue when priorities or limits change ([`Signal::Reclaim`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::Ctx;
use super::writer::COMPLETION_BATCH;
use crate::scheduler::LocalRun;
use crate::store::*;
use crate::telemetry;

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
    /// none until a run has ended, and none for runs longer than two claims (see
    /// [`Pace::outlook`]).
    fn ahead(&self, workers: usize, max: usize) -> usize {
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
    fn outlook(&self, starts: impl IntoIterator<Item = Micros>, now: Micros) -> Outlook {
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
struct Outlook {
    /// Runs expected to end within a claim's lead: each may have its follower claimed.
    ending: usize,
    /// When the next run comes within that lead.
    next: Option<Micros>,
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
        // The same instant for the claim and for the next due time: a retry that became due
        // between the two would otherwise be neither claimed nor waited for.
        let now = now_micros();
        let ahead = scheduler.pace.ahead(workers, config.prefetch);
        let outlook = if scheduler.pace.by_outlook(workers, config.prefetch) {
            scheduler.pace.outlook(run_starts(ctx), now)
        } else {
            Outlook::default()
        };
        let capacity = workers + ahead.max(outlook.ending.min(config.prefetch));
        let mut holding = ctx.busy.load(Ordering::Relaxed);
        if ahead == 0 && holding > capacity {
            // Runs went on past their expected ends, or tasks got longer: what was held
            // for the slots they keep goes back to the queue, for any node's idle slot.
            let back = ctx.reserved.take_last(holding - capacity);
            holding -= back.len();
            ctx.give_back(back);
        }
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
        if worth_claiming {
            let span = if telemetry::on() {
                tracing::info_span!(
                    target: telemetry::TARGET,
                    "claim",
                    otel.kind = "internal",
                    qhost.node = %config.node,
                    qhost.asked = room,
                    qhost.claimed = tracing::field::Empty,
                )
            } else {
                tracing::Span::none()
            };
            let asked = tokio::time::Instant::now();
            let claimed = scheduler
                .store
                .task_claim(ClaimParams {
                    node: config.node.clone(),
                    max: room,
                    now,
                    lease: config.lease,
                })
                .instrument(span.clone())
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
            span.record("qhost.claimed", claimed.len());
            let claim = telemetry::context::span_context(&span);
            drop(span);
            if !claimed.is_empty() {
                ctx.held.send_modify(|n| *n += claimed.len());
                ctx.busy.fetch_add(claimed.len(), Ordering::Relaxed);
                let labels = &scheduler.module_labels;
                labels
                    .know(&claimed, &*scheduler.store, &scheduler.metrics)
                    .await;
                let mut shown = None;
                let mut running = scheduler.running.lock().expect("running lock");
                for task in &claimed {
                    // Most claims take tasks of one module: look it up once.
                    if shown
                        .as_ref()
                        .is_none_or(|(digest, _)| *digest != task.module)
                    {
                        let series = labels.of(task.module, &scheduler.metrics).series.clone();
                        shown = Some((task.module, series));
                    }
                    let (_, series) = shown.as_ref().expect("set above");
                    scheduler.metrics.claimed(task.id, task.claimed_at, series);
                    running.insert(
                        task.id,
                        LocalRun {
                            batch: task.batch,
                            cancel: CancellationToken::new(),
                            started: None,
                            claim: claim.clone(),
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
        // Nothing more to claim now: sleep until woken, until a retry becomes due, or until
        // a run comes near its end.
        let wake_at = next_due.into_iter().chain(outlook.next).min();
        let sleep = async {
            match (wake_at, contended.filter(|_| !full)) {
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

/// When this node's runs began.
fn run_starts(ctx: &Ctx) -> Vec<Micros> {
    let running = ctx.scheduler.running.lock().expect("running lock");
    running
        .values()
        .filter_map(|run| run.started.as_ref().map(|started| started.since))
        .collect()
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
