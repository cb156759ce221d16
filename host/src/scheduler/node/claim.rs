//! The claim loop: claims tasks for this node's slots, and for a few more (`pace.rs` says
//! how many), and holds them `reserved` until the starter runs them. What it holds goes
//! back to the queue when priorities or limits change ([`Signal::Reclaim`]).
//!
//! While it sleeps, the loop leaves its claim standing with the writer (`standing.rs`), on
//! a store that claims in reports.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::Ctx;
use super::pace::Outlook;
use super::standing::{Answer, worth_claiming};
use super::writer::COMPLETION_BATCH;
use crate::scheduler::LocalRun;
use crate::store::*;
use crate::telemetry;

/// What ended the claim loop's sleep.
enum Woke {
    /// A wake-up, a retry or a run's end coming due: the loop claims.
    Due,
    /// A write of the writer that made work claimable, which no claim has seen: its
    /// number.
    Written(u64),
    /// The writer's answer to the standing claim; an error if it claimed nothing.
    Answer(Result<Answer, oneshot::error::RecvError>),
    Stop,
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
    let stands = scheduler.store.claims_in_reports();
    // What the writer claimed for the standing claim.
    let mut answered: Option<Answer> = None;
    // Whether this round claims: anything but the writer's answer woke the loop.
    let mut woken = true;
    // The writer's writes that this loop's claims have seen.
    let mut seen = 0;
    loop {
        let mut next_due = None;
        // Whether the round's claim took all it asked for: more may be claimable.
        let mut full = false;
        if let Some(Answer {
            max,
            claimed,
            seen: saw,
        }) = answered.take()
        {
            seen = seen.max(saw);
            full = claimed.tasks.len() == max;
            woken |= full;
            next_due = claimed.next_due;
            let span = claim_span(ctx, max);
            take_in(ctx, claimed.tasks, &span).await;
        }
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
        let claims = woken && worth_claiming(room, capacity, holding, workers);
        if claims {
            let span = claim_span(ctx, room);
            let asked = tokio::time::Instant::now();
            let before = ctx.writes.count();
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
            seen = seen.max(before);
            scheduler.pace.claimed(asked.elapsed());
            contended = match contended {
                _ if !claimed.contended => None,
                None => Some(FIRST_RETRY),
                Some(pause) => Some((pause * 2).min(Duration::from_millis(50))),
            };
            next_due = claimed.next_due;
            full = claimed.tasks.len() == room;
            take_in(ctx, claimed.tasks, &span).await;
            if full {
                // More may be claimable once a completion frees room.
                tokio::task::yield_now().await;
            }
        }
        // Nothing more to claim now. Leave the claim with the writer's next completions,
        // and sleep until woken, until a retry becomes due, or until a run comes near its
        // end.
        let stand = stands && contended.is_none();
        let mut parked = stand.then(|| ctx.standing.park(capacity, workers, outlook.ending == 0));
        let woke = {
            let wake_at = next_due.into_iter().chain(outlook.next).min();
            let sleep = async {
                match (wake_at, contended.filter(|_| claims && !full)) {
                    (_, Some(pause)) => tokio::time::sleep(pause).await,
                    (Some(at), None) => tokio::time::sleep(micros_until(at)).await,
                    (None, None) => std::future::pending().await,
                }
            };
            let answer = async {
                match parked.as_mut() {
                    Some(parked) => parked.await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = scheduler.wake.notified() => Woke::Due,
                n = ctx.writes.missed_since(seen) => Woke::Written(n),
                () = sleep => Woke::Due,
                got = answer => Woke::Answer(got),
                () = stop.cancelled() => Woke::Stop,
            }
        };
        woken = true;
        match (woke, parked.take()) {
            (Woke::Answer(got), Some(_)) => {
                woken = got.is_err();
                answered = got.ok();
            }
            // Take the standing claim back, or wait for the writer's answer to it.
            (Woke::Due, Some(parked)) if !ctx.standing.withdraw() => {
                answered = parked.await.ok();
            }
            // The answer may come from a later write, which saw the one that woke the loop
            // (woken only for an `n` above `seen`).
            (Woke::Written(n), Some(parked)) if !ctx.standing.withdraw() => {
                answered = parked.await.ok();
                woken = answered.as_ref().is_none_or(|answer| answer.seen < n);
                seen = seen.max(n);
            }
            // Woken once for it, as for any wake-up, whether or not this round claims.
            (Woke::Written(n), _) => seen = seen.max(n),
            (Woke::Stop, Some(mut parked)) if !ctx.standing.withdraw() => {
                // What the writer claims from now on it hands back; what it already has
                // is reserved, and handed back with the rest.
                parked.close();
                if let Ok(Answer { max, claimed, .. }) = parked.try_recv() {
                    take_in(ctx, claimed.tasks, &claim_span(ctx, max)).await;
                }
                return Ok(());
            }
            (Woke::Stop, _) => return Ok(()),
            _ => {}
        }
    }
}

/// The span of a claim of at most `asked` tasks, when traces are on.
fn claim_span(ctx: &Ctx, asked: usize) -> tracing::Span {
    if !telemetry::on() {
        return tracing::Span::none();
    }
    tracing::info_span!(
        target: telemetry::TARGET,
        "claim",
        otel.kind = "internal",
        qhost.node = %ctx.scheduler.config.node,
        qhost.asked = asked,
        qhost.claimed = tracing::field::Empty,
    )
}

/// Holds claimed tasks for the starter: counts them held and busy, known to the metrics
/// and the running view, and reserved in claim order.
async fn take_in(ctx: &Ctx, claimed: Vec<ClaimedTask>, span: &tracing::Span) {
    span.record("qhost.claimed", claimed.len());
    if claimed.is_empty() {
        return;
    }
    let scheduler = &ctx.scheduler;
    let claim = telemetry::context::span_context(span);
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
