//! The lease keeper: renews this node's leases while it holds tasks, and stops the runs
//! cancelled meanwhile. It waits while nothing is held, so an idle node never writes.

use std::sync::Arc;

use super::Ctx;
use crate::store::*;

/// Renews the leases of this node's tasks while it holds any; stops the runs that were
/// cancelled, and hands back the cancelled tasks it reserved, which then never start.
pub(super) async fn keep_leases(ctx: Arc<Ctx>) {
    let scheduler = &ctx.scheduler;
    let every = scheduler.config.lease / 3;
    let mut held = ctx.held.subscribe();
    loop {
        tokio::select! {
            changed = held.wait_for(|n| *n > 0) => if changed.is_err() { return },
            () = ctx.hand_back.cancelled() => return,
        }
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = scheduler.renew_now.notified() => {}
            () = ctx.hand_back.cancelled() => return,
        }
        let until = now_micros() + duration_micros(scheduler.config.lease);
        match scheduler
            .store
            .lease_renew(scheduler.config.node.clone(), until)
            .await
        {
            Ok(cancelled) => {
                ctx.give_back(ctx.reserved.take(&cancelled));
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
