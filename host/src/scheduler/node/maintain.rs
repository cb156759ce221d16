//! Maintenance: on a shared store, the node's heartbeat and the rescue of other nodes'
//! expired leases; on any store with a retention, pruning what ended before it, every
//! tenth of the retention.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::beat;
use crate::scheduler::Scheduler;
use crate::store::*;

/// On a shared store, beats in the node registry and rescues other nodes' expired
/// leases; prunes ended tasks past their retention.
pub(super) async fn maintain(
    scheduler: Arc<Scheduler>,
    stop: CancellationToken,
    started_at: Micros,
) {
    let config = &scheduler.config;
    let shared = scheduler.store.is_shared();
    let rescue_every = config
        .rescue_every
        .or_else(|| shared.then(|| (config.lease / 3).min(Duration::from_secs(5))));
    let prune_every = config.retention.map(prune_every);
    let every = match (rescue_every, prune_every) {
        (None, None) => return,
        (Some(rescue), _) => rescue,
        // Nothing else to do: once a minute at most.
        (None, Some(prune)) => prune.max(Duration::from_secs(60)),
    };
    let mut pruned_at: Option<tokio::time::Instant> = None;
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
                    if result.hooked {
                        scheduler.hooks_wake.notify_one();
                    }
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
        if let (Some(retention), Some(prune_every)) = (config.retention, prune_every)
            && pruned_at.is_none_or(|at| at.elapsed() >= prune_every)
        {
            pruned_at = Some(tokio::time::Instant::now());
            let before = now_micros() - duration_micros(retention);
            prune(&scheduler, before, &stop).await;
        }
    }
}

/// How often ended work is pruned, from the first upkeep on: every tenth of the retention
/// (a second at least), not at every rescue of a shared store (every few seconds), since
/// finding what to prune reads the ended tasks along the primary key, the whole table when
/// none is old enough.
fn prune_every(retention: Duration) -> Duration {
    (retention / 10).max(Duration::from_secs(1))
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
