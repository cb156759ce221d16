//! A node: the loop that claims tasks and runs them on the runtime's slots, the writer
//! that records completions in few transactions, and the keeper that renews leases.
//!
//! How far ahead to claim: a claim is a transaction, and the store can make only so many
//! a second; tasks of a few microseconds are claimed thousands at a time, tasks of seconds
//! one or two ahead (so that they do not wait on a node while another could run them).
//! [`Pace`] keeps the recent run time and the claim loop holds about
//! [`SchedulerConfig::claim_ahead`](super::SchedulerConfig) of work beyond its slots.
//!
//! Nothing here sleeps to poll: the claim loop waits for a wake-up (a submission, a
//! completion, a group limit raised) or for the next retry time; the lease keeper waits
//! while nothing runs. An idle node uses no CPU.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{BatchEvent, LocalRun, Scheduler};
use crate::runtime::{OnStart, RunRequest, TaskInfo as RunInfo};
use crate::store::*;

/// Completions written in one transaction at most.
const COMPLETION_BATCH: usize = 2048;

/// A moving average of how long runs take on this node.
#[derive(Default)]
pub(crate) struct Pace {
    /// Nanoseconds; 0 until the first run ends.
    run_nanos: AtomicU64,
}

impl Pace {
    fn record(&self, took: Duration) {
        let took = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1);
        // Races between runs lose an update now and then; the average stays close.
        let old = self.run_nanos.load(Ordering::Relaxed);
        let new = if old == 0 {
            took
        } else {
            old - old / 16 + took / 16
        };
        self.run_nanos.store(new.max(1), Ordering::Relaxed);
    }

    /// Tasks to hold beyond the free slots: `ahead` worth of work for `workers` slots,
    /// at least one per slot and at most `max`; one per slot until a run has ended.
    fn prefetch(&self, workers: usize, ahead: Duration, max: usize) -> usize {
        let run = self.run_nanos.load(Ordering::Relaxed);
        let per_slot = match run {
            0 => 1,
            run => usize::try_from(ahead.as_nanos() / u128::from(run)).unwrap_or(usize::MAX),
        };
        per_slot
            .saturating_mul(workers)
            .clamp(workers.min(max), max)
    }
}

/// How a run left its task.
enum Done {
    Completed(Box<Completion>),
    /// The node is stopping: the task goes back to the queue untouched.
    HandedBack(TaskId, i64),
}

/// A running node. Stop it with [`Node::stop`].
pub struct Node {
    scheduler: Arc<Scheduler>,
    /// Forwards other nodes' news to this one, on a shared store.
    signals: Option<JoinHandle<()>>,
    stop_claiming: CancellationToken,
    grace: watch::Sender<Option<Duration>>,
    main: JoinHandle<anyhow::Result<()>>,
}

impl Node {
    /// Rescues this node's attempts from an earlier life, then starts claiming.
    pub async fn start(scheduler: Arc<Scheduler>) -> anyhow::Result<Node> {
        let started_at = now_micros();
        if scheduler.store.is_shared() {
            beat(&scheduler, started_at)
                .await
                .context("registering this node")?;
        }
        let signals = scheduler
            .store
            .signals()
            .map(|signals| tokio::spawn(forward_signals(scheduler.clone(), signals)));
        let rescued = scheduler
            .store
            .lease_rescue(Some(scheduler.config.node.clone()), now_micros())
            .await
            .context("recovering the attempts of this node's previous run")?;
        if !rescued.ended.is_empty() || rescued.retried > 0 {
            tracing::warn!(
                retried = rescued.retried,
                failed = rescued.ended.len(),
                "recovered attempts lost when this node last stopped"
            );
        }
        for (_, batch) in rescued.ended {
            scheduler.notify_batch(batch);
        }
        let stop_claiming = CancellationToken::new();
        let (grace, grace_rx) = watch::channel(None);
        let main = tokio::spawn(run(
            scheduler.clone(),
            stop_claiming.clone(),
            grace_rx,
            started_at,
        ));
        Ok(Node {
            scheduler,
            signals,
            stop_claiming,
            grace,
            main,
        })
    }

    /// Stops claiming, lets running tasks finish within `grace`, hands back the rest so
    /// that nothing is lost, and returns once every completion is written.
    pub async fn stop(self, grace: Duration) -> anyhow::Result<()> {
        let _ = self.grace.send(Some(grace));
        self.stop_claiming.cancel();
        let result = self.main.await.context("the node's main task failed")?;
        if let Some(signals) = self.signals {
            signals.abort();
        }
        if self.scheduler.store.is_shared() {
            let node = self.scheduler.config.node.clone();
            if let Err(err) = self.scheduler.store.node_remove(node).await {
                tracing::warn!("leaving the node registry failed: {err:#}");
            }
        }
        result
    }
}

/// Turns other nodes' news into this node's wake-ups and batch events.
async fn forward_signals(scheduler: Arc<Scheduler>, mut signals: broadcast::Receiver<Signal>) {
    loop {
        match signals.recv().await {
            Ok(Signal::Wake) => scheduler.wake.notify_one(),
            Ok(Signal::Batches(batches)) => {
                // Tasks that ended freed their slots and may have opened gates.
                scheduler.wake.notify_one();
                for batch in batches {
                    scheduler.notify_batch(batch);
                }
            }
            Ok(Signal::Cancel) => scheduler.renew_now.notify_one(),
            Ok(Signal::Resync) | Err(broadcast::error::RecvError::Lagged(_)) => {
                scheduler.wake.notify_one();
                scheduler.renew_now.notify_one();
                scheduler.notify_batch(BatchEvent::ANY);
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

async fn beat(scheduler: &Scheduler, started_at: Micros) -> StoreResult<()> {
    scheduler
        .store
        .node_beat(NodeBeat {
            node: scheduler.config.node.clone(),
            workers: scheduler.runtime.config().workers,
            started_at,
            now: now_micros(),
        })
        .await
}

async fn run(
    scheduler: Arc<Scheduler>,
    stop_claiming: CancellationToken,
    mut grace: watch::Receiver<Option<Duration>>,
    started_at: Micros,
) -> anyhow::Result<()> {
    let (done_tx, done_rx) = mpsc::unbounded_channel();
    // Tasks this node holds: claimed and not yet completed in the store.
    let (held_tx, held_rx) = watch::channel(0usize);
    let held_tx = Arc::new(held_tx);
    let hand_back = CancellationToken::new();
    let writer = tokio::spawn(write_completions(
        scheduler.clone(),
        done_rx,
        held_tx.clone(),
    ));
    let keeper = tokio::spawn(keep_leases(
        scheduler.clone(),
        held_rx.clone(),
        hand_back.clone(),
    ));
    let maintenance = tokio::spawn(maintain(scheduler.clone(), hand_back.clone(), started_at));

    // A failing store (a database restarting, say) pauses claiming, never ends it.
    let mut delay = Duration::from_millis(50);
    loop {
        let started = tokio::time::Instant::now();
        let Err(err) = claim_loop(&scheduler, &stop_claiming, &held_tx, &done_tx, &hand_back).await
        else {
            break;
        };
        if started.elapsed() > Duration::from_secs(10) {
            delay = Duration::from_millis(50);
        }
        tracing::error!(
            "claiming failed, retrying in {}: {err:#}",
            humantime::format_duration(delay)
        );
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = stop_claiming.cancelled() => break,
        }
        delay = (delay * 2).min(Duration::from_secs(5));
    }

    // Stopping: wait for the runs within the grace period, then hand back the rest.
    let grace = grace
        .wait_for(Option::is_some)
        .await
        .map(|g| g.unwrap_or_default())
        .unwrap_or_default();
    let mut held = held_rx.clone();
    if tokio::time::timeout(grace, held.wait_for(|n| *n == 0))
        .await
        .is_err()
    {
        tracing::info!(
            held = *held.borrow(),
            "grace period over: handing back unfinished tasks"
        );
    }
    hand_back.cancel();
    drop(done_tx);
    writer.await.context("completion writer")?;
    keeper.await.context("lease keeper")?;
    maintenance.await.context("maintenance")?;
    Ok(())
}

async fn claim_loop(
    scheduler: &Arc<Scheduler>,
    stop: &CancellationToken,
    held: &Arc<watch::Sender<usize>>,
    done: &mpsc::UnboundedSender<Done>,
    hand_back: &CancellationToken,
) -> anyhow::Result<()> {
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
        let capacity = workers
            + scheduler
                .pace
                .prefetch(workers, config.claim_ahead, config.prefetch);
        let holding = *held.borrow();
        let room = capacity.saturating_sub(holding);
        // Claim in large batches: wait until half the capacity is free, unless slots would
        // otherwise go idle.
        let worth_claiming = room > 0 && (holding < workers || room >= capacity / 2);
        let mut full = !worth_claiming;
        let mut next_due = None;
        // The same instant for the claim and for the next due time: a retry that became due
        // between the two would otherwise be neither claimed nor waited for.
        let now = now_micros();
        if worth_claiming {
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
            contended = match contended {
                _ if !claimed.contended => None,
                None => Some(FIRST_RETRY),
                Some(pause) => Some((pause * 2).min(Duration::from_millis(50))),
            };
            next_due = claimed.next_due;
            let claimed = claimed.tasks;
            full = claimed.len() == room;
            if !claimed.is_empty() {
                held.send_modify(|n| *n += claimed.len());
            }
            for task in claimed {
                tokio::spawn(run_one(
                    scheduler.clone(),
                    task,
                    done.clone(),
                    hand_back.clone(),
                ));
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

async fn run_one(
    scheduler: Arc<Scheduler>,
    task: ClaimedTask,
    done: mpsc::UnboundedSender<Done>,
    hand_back: CancellationToken,
) {
    scheduler.metrics.claimed(task.id, task.claimed_at);
    let cancel = CancellationToken::new();
    scheduler.running.lock().expect("running lock").insert(
        task.id,
        LocalRun {
            batch: task.batch,
            cancel: cancel.clone(),
            slot: None,
        },
    );
    let on_start = {
        let scheduler = scheduler.clone();
        let id = task.id;
        OnStart(Arc::new(move |slot| {
            if let Some(run) = scheduler.running.lock().expect("running lock").get_mut(&id) {
                run.slot = Some(slot);
            }
        }))
    };
    let run = async {
        let module = scheduler.module(task.module).await?;
        let request = RunRequest {
            input: task.input.clone(),
            info: RunInfo {
                id: task.id as u64,
                batch: task.batch as u64,
                attempt: task.attempt,
                order: task.order,
                group: task.group.clone(),
            },
            limits: task.limits,
            mounts: task.mounts.clone(),
            cancel,
            on_start: Some(on_start),
        };
        scheduler.runtime.run(&module, request).await
    };
    let ended = tokio::select! {
        report = run => Some(report),
        () = hand_back.cancelled() => None,
    };
    scheduler
        .running
        .lock()
        .expect("running lock")
        .remove(&task.id);
    let node = scheduler.config.node.clone();
    let message = match ended {
        None => Done::HandedBack(task.id, task.lease_token),
        Some(Ok(report)) => {
            scheduler.metrics.ran(report.outcome, report.duration);
            scheduler.pace.record(report.duration);
            let started_at = to_micros(report.started_at);
            Done::Completed(Box::new(Completion {
                task: task.id,
                lease_token: task.lease_token,
                node,
                slot: Some(report.slot),
                started_at,
                ended_at: started_at + duration_micros(report.duration),
                outcome: report.outcome,
                error: report.error,
                output: report.output,
                logs: report.logs,
                stdout: report.stdout.bytes,
                stderr: report.stderr.bytes,
            }))
        }
        Some(Err(err)) => {
            scheduler
                .metrics
                .ran(crate::runtime::Outcome::Trap, Duration::ZERO);
            let now = now_micros();
            Done::Completed(Box::new(Completion {
                task: task.id,
                lease_token: task.lease_token,
                node,
                slot: None,
                started_at: now,
                ended_at: now,
                outcome: crate::runtime::Outcome::Trap,
                error: Some(format!("the task could not start: {err:#}")),
                output: None,
                logs: Vec::new(),
                stdout: Vec::new(),
                stderr: Vec::new(),
            }))
        }
    };
    // The writer lives until every run has reported.
    let _ = done.send(message);
}

/// Writes completions as they come, many per transaction, then wakes the claim loop and
/// the waiters of the batches whose tasks ended.
async fn write_completions(
    scheduler: Arc<Scheduler>,
    mut done: mpsc::UnboundedReceiver<Done>,
    held: Arc<watch::Sender<usize>>,
) {
    let mut buffer = Vec::new();
    while done.recv_many(&mut buffer, COMPLETION_BATCH).await > 0 {
        let count = buffer.len();
        let mut completions = Vec::with_capacity(count);
        let mut handed_back = Vec::new();
        for message in buffer.drain(..) {
            match message {
                Done::Completed(c) => completions.push(*c),
                Done::HandedBack(task, token) => handed_back.push((task, token)),
            }
        }
        let mut delay = Duration::from_millis(50);
        loop {
            match write(&scheduler, &completions, &handed_back).await {
                Ok(batches) => {
                    for batch in batches {
                        scheduler.notify_batch(batch);
                    }
                    break;
                }
                Err(err) => {
                    // Keep the completions: they are the only record of these attempts.
                    tracing::error!("writing {count} completion(s) failed, retrying: {err:#}");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        }
        held.send_modify(|n| *n -= count);
        scheduler.wake.notify_one();
    }
}

async fn write(
    scheduler: &Scheduler,
    completions: &[Completion],
    handed_back: &[(TaskId, i64)],
) -> anyhow::Result<Vec<BatchId>> {
    let mut batches = Vec::new();
    if !completions.is_empty() {
        let result = scheduler
            .store
            .task_complete(completions.to_vec(), now_micros())
            .await?;
        if result.stale > 0 {
            tracing::warn!(
                stale = result.stale,
                "completions of rescued attempts were ignored"
            );
        }
        batches.extend(result.ended.iter().map(|&(_, batch)| batch));
    }
    if !handed_back.is_empty() {
        scheduler.store.task_release(handed_back.to_vec()).await?;
    }
    batches.sort_unstable();
    batches.dedup();
    Ok(batches)
}

/// Renews the leases of this node's tasks while it holds any, and stops the runs that
/// were cancelled elsewhere.
async fn keep_leases(
    scheduler: Arc<Scheduler>,
    mut held: watch::Receiver<usize>,
    stop: CancellationToken,
) {
    let every = scheduler.config.lease / 3;
    loop {
        tokio::select! {
            changed = held.wait_for(|n| *n > 0) => if changed.is_err() { return },
            () = stop.cancelled() => return,
        }
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = scheduler.renew_now.notified() => {}
            () = stop.cancelled() => return,
        }
        let until = now_micros() + duration_micros(scheduler.config.lease);
        match scheduler
            .store
            .lease_renew(scheduler.config.node.clone(), until)
            .await
        {
            Ok(cancelled) => {
                let running = scheduler.running.lock().expect("running lock");
                for task in cancelled {
                    if let Some(run) = running.get(&task) {
                        run.cancel.cancel();
                    }
                }
            }
            Err(err) => tracing::error!("renewing leases failed: {err:#}"),
        }
    }
}

/// On a shared store, beats in the node registry and rescues other nodes' expired
/// leases; prunes ended tasks past their retention.
async fn maintain(scheduler: Arc<Scheduler>, stop: CancellationToken, started_at: Micros) {
    let config = &scheduler.config;
    let shared = scheduler.store.is_shared();
    let rescue_every = config
        .rescue_every
        .or_else(|| shared.then(|| (config.lease / 3).min(Duration::from_secs(5))));
    let every = match (rescue_every, config.retention) {
        (None, None) => return,
        (Some(rescue), None) => rescue,
        (None, Some(retention)) => (retention / 10).max(Duration::from_secs(60)),
        (Some(rescue), Some(retention)) => {
            rescue.min((retention / 10).max(Duration::from_secs(60)))
        }
    };
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = stop.cancelled() => return,
        }
        if shared && let Err(err) = beat(&scheduler, started_at).await {
            tracing::error!("heartbeat failed: {err:#}");
        }
        if rescue_every.is_some() {
            match scheduler.store.lease_rescue(None, now_micros()).await {
                Ok(result) => {
                    for (_, batch) in result.ended {
                        scheduler.notify_batch(batch);
                    }
                    if result.retried > 0 {
                        scheduler.wake.notify_one();
                    }
                }
                Err(err) => tracing::error!("rescuing expired leases failed: {err:#}"),
            }
        }
        if let Some(retention) = config.retention {
            let before = now_micros() - duration_micros(retention);
            prune(&scheduler, before, &stop).await;
        }
    }
}

/// Deletes ended work in bounded chunks, so claims are never stalled for long.
pub async fn prune(scheduler: &Scheduler, before: Micros, stop: &CancellationToken) -> usize {
    const CHUNK: usize = 1000;
    let mut total = 0;
    while !stop.is_cancelled() {
        match scheduler.store.prune(before, CHUNK).await {
            Ok(deleted) => {
                total += deleted;
                if deleted < CHUNK {
                    break;
                }
                tokio::task::yield_now().await;
            }
            Err(err) => {
                tracing::error!("pruning ended tasks failed: {err:#}");
                break;
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_far_ahead_for_short_runs_and_barely_for_long_ones() {
        let ahead = Duration::from_millis(50);
        let pace = Pace::default();
        assert_eq!(
            pace.prefetch(2, ahead, 4096),
            2,
            "one per slot before any run"
        );
        pace.record(Duration::from_micros(10));
        assert_eq!(pace.prefetch(2, ahead, 4096), 4096, "capped");
        let pace = Pace::default();
        pace.record(Duration::from_millis(1));
        assert_eq!(pace.prefetch(2, ahead, 4096), 100);
        let pace = Pace::default();
        pace.record(Duration::from_secs(3));
        assert_eq!(pace.prefetch(2, ahead, 4096), 2, "at least one per slot");
        assert_eq!(pace.prefetch(2, ahead, 0), 0, "none when none is allowed");
    }

    #[test]
    fn the_pace_follows_a_change_of_run_times() {
        let pace = Pace::default();
        pace.record(Duration::from_micros(10));
        for _ in 0..100 {
            pace.record(Duration::from_millis(10));
        }
        assert_eq!(pace.prefetch(1, Duration::from_millis(50), 4096), 5);
    }
}
