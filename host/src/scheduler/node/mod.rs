//! A node: the loop that claims tasks, the starter that runs them on the runtime's slots
//! in claim order, the writer that records starts and completions in few transactions, and
//! the keeper that renews leases.
//!
//! - [`claim`]: the claim loop; [`pace`]: how far ahead of its slots a node claims.
//! - [`run`]: the starter, and one task's run in a slot.
//! - [`writer`]: the completion writer; [`standing`]: the claim the claim loop leaves
//!   with it while it waits for work.
//! - [`leases`]: the lease keeper.
//! - [`maintain`]: heartbeats, the rescue of expired leases, pruning.
//! - [`ticker`]: schedules' ticks, each opening its batch through the scheduler's checks.
//! - [`webhooks`]: the sender that posts the webhook outbox's events.
//!
//! This file starts and stops a node, holds what its loops share ([`Ctx`]) and forwards
//! other nodes' news on a shared store.
//!
//! Nothing here sleeps to poll: the claim loop waits for a wake-up (a submission, a
//! completion, a group limit raised) or for the next retry time; the lease keeper waits
//! while nothing runs; the ticker waits for the next tick. An idle node uses no CPU.

mod claim;
mod leases;
mod maintain;
mod pace;
mod run;
mod standing;
pub mod ticker;
mod webhooks;
mod writer;
mod writes;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::Context;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::reserved::Reserved;
use super::{BatchEvent, Scheduler};
use crate::store::*;
use claim::{claim_loop, reclaim_on_change};
use leases::keep_leases;
use maintain::maintain;
use run::start_in_order;
use standing::Standing;
use writer::{Done, write_completions};
use writes::Writes;

pub use maintain::prune;
pub(crate) use pace::Pace;
pub use ticker::Ticker;

/// A running node. Stop it with [`Node::stop`].
pub struct Node {
    scheduler: Arc<Scheduler>,
    /// Forwards other nodes' news to this one, on a shared store.
    signals: Option<JoinHandle<()>>,
    stop_claiming: CancellationToken,
    grace: watch::Sender<Option<Duration>>,
    main: JoinHandle<anyhow::Result<()>>,
    /// The webhook sender, stopped with the node.
    hooks: (CancellationToken, JoinHandle<()>),
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
        scheduler
            .hold_tenant_ceilings()
            .await
            .context("lowering tenants' work to their priority ceilings")?;
        let stop_hooks = CancellationToken::new();
        let hooks = tokio::spawn(webhooks::send_webhooks(
            scheduler.clone(),
            stop_hooks.clone(),
        ));
        let stop_claiming = CancellationToken::new();
        let (grace, grace_rx) = watch::channel(None);
        let main = tokio::spawn(run_node(
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
            hooks: (stop_hooks, hooks),
        })
    }

    /// Stops claiming, lets running tasks finish within `grace`, hands back the rest so
    /// that nothing is lost, and returns once every completion is written; or, when the
    /// store takes nothing, after one more `grace` (a second at least), logging what was
    /// not written: those tasks run again once their leases expire.
    pub async fn stop(self, grace: Duration) -> anyhow::Result<()> {
        let _ = self.grace.send(Some(grace));
        self.stop_claiming.cancel();
        let result = self.main.await.context("the node's main task failed")?;
        // Tries in flight are dropped: their events are tried again once held no more.
        self.hooks.0.cancel();
        let _ = self.hooks.1.await;
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
            Ok(Signal::Reclaim) => scheduler.reclaim.notify_one(),
            Ok(Signal::Batches(batches)) => {
                // Tasks that ended freed their slots and may have opened gates.
                scheduler.wake.notify_one();
                for batch in batches {
                    scheduler.notify_batch(batch);
                }
            }
            Ok(Signal::Started(batches)) => {
                for batch in batches {
                    scheduler.notify_batch(batch);
                }
            }
            Ok(Signal::Cancel) => scheduler.renew_now.notify_one(),
            Ok(Signal::Resync) | Err(broadcast::error::RecvError::Lagged(_)) => {
                scheduler.reclaim.notify_one();
                scheduler.renew_now.notify_one();
                scheduler.notify_batch(BatchEvent::ANY);
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Tells the node registry that this node is alive, and with how many slots.
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

/// What the node's loops share.
struct Ctx {
    scheduler: Arc<Scheduler>,
    /// Claimed tasks not yet started, in claim order.
    reserved: Reserved,
    /// To the writer. The writer ends once every sender is gone.
    done: mpsc::UnboundedSender<Done>,
    /// Tasks this node holds: claimed and not yet completed or handed back in the store.
    held: Arc<watch::Sender<usize>>,
    /// Of those, the ones reserved or running: a slot whose run ended is free for the
    /// next claim while the writer records the end.
    busy: Arc<AtomicUsize>,
    /// Cancelled when the node stops for good: runs still going are handed back.
    hand_back: CancellationToken,
    /// The claim the claim loop leaves with the writer while it waits for work.
    standing: Arc<Standing>,
    /// The writer's writes, as far as claims saw them.
    writes: Arc<Writes>,
}

impl Ctx {
    /// Gives reserved tasks back to the queue, through the writer.
    fn give_back(&self, tasks: Vec<ClaimedTask>) {
        if tasks.is_empty() {
            return;
        }
        self.busy.fetch_sub(tasks.len(), Ordering::Relaxed);
        let mut running = self.scheduler.running.lock().expect("running lock");
        for task in tasks {
            running.remove(&task.id);
            let _ = self.done.send(Done::HandedBack(task.id, task.lease_token));
        }
    }
}

/// The node's main task: starts its loops and claims until told to stop, then winds them
/// down as [`Node::stop`] says.
async fn run_node(
    scheduler: Arc<Scheduler>,
    stop_claiming: CancellationToken,
    mut grace: watch::Receiver<Option<Duration>>,
    started_at: Micros,
) -> anyhow::Result<()> {
    let (done_tx, done_rx) = mpsc::unbounded_channel();
    let held = Arc::new(watch::channel(0usize).0);
    let busy = Arc::new(AtomicUsize::new(0));
    let standing = Arc::new(Standing::new(busy.clone()));
    let writes = Arc::new(Writes::default());
    let ctx = Arc::new(Ctx {
        scheduler: scheduler.clone(),
        reserved: Reserved::default(),
        done: done_tx,
        held: held.clone(),
        busy,
        hand_back: CancellationToken::new(),
        standing: standing.clone(),
        writes: writes.clone(),
    });
    let give_up = CancellationToken::new();
    let mut writer = tokio::spawn(write_completions(
        scheduler.clone(),
        done_rx,
        held.clone(),
        standing,
        writes,
        give_up.clone(),
    ));
    let keeper = tokio::spawn(keep_leases(ctx.clone()));
    let maintenance = tokio::spawn(maintain(
        scheduler.clone(),
        ctx.hand_back.clone(),
        started_at,
    ));
    let starter = tokio::spawn(start_in_order(ctx.clone(), stop_claiming.clone()));
    let reclaimer = tokio::spawn(reclaim_on_change(ctx.clone(), stop_claiming.clone()));
    let ticker = tokio::spawn(Ticker::new(scheduler.clone()).run(stop_claiming.clone()));

    // A failing store (a database restarting, say) pauses claiming, never ends it.
    let mut delay = Duration::from_millis(50);
    loop {
        let started = tokio::time::Instant::now();
        let Err(err) = claim_loop(&ctx, &stop_claiming).await else {
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

    // Stopping: what has not started goes back at once; runs may finish within the grace
    // period, then the rest goes back too.
    starter.await.context("the starter")?;
    reclaimer.await.context("the reclaimer")?;
    ticker.await.context("the ticker")?;
    ctx.give_back(ctx.reserved.take_all());
    let grace = grace
        .wait_for(Option::is_some)
        .await
        .map(|g| g.unwrap_or_default())
        .unwrap_or_default();
    let mut held_rx = held.subscribe();
    if tokio::time::timeout(grace, held_rx.wait_for(|n| *n == 0))
        .await
        .is_err()
    {
        tracing::info!(
            held = *held_rx.borrow(),
            "grace period over: handing back unfinished tasks"
        );
    }
    ctx.hand_back.cancel();
    keeper.await.context("lease keeper")?;
    maintenance.await.context("maintenance")?;
    drop(ctx);
    // A store that takes nothing must not keep the node from stopping: past a grace period
    // of its own, the writer gives up and logs what it could not write.
    let written = match tokio::time::timeout(grace.max(MIN_WRITER_GRACE), &mut writer).await {
        Ok(written) => written,
        Err(_) => {
            give_up.cancel();
            writer.await
        }
    };
    written.context("completion writer")?;
    Ok(())
}

/// The least time a stopping node gives its writer to record what its runs left, however
/// short the grace period.
const MIN_WRITER_GRACE: Duration = Duration::from_secs(1);
