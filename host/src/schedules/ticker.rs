//! The ticker: a node's loop that handles its schedules' ticks as they come due. It sleeps
//! until the earliest next tick (or a wake-up when a schedule is created, resumed or run
//! now), and hands each due tick to the store, which handles it once across every node.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::timing::{self, CatchUp, Overlap, Timing};
use crate::store::*;

/// Turns a schedule's plan into the batch a tick opens, or says why it cannot.
pub type Compile = Arc<
    dyn Fn(ScheduleInfo, Micros) -> BoxFuture<'static, Result<TickBatch, String>> + Send + Sync,
>;

/// The longest the ticker sleeps: schedules another node created or resumed are seen
/// within it.
const MAX_SLEEP: Duration = Duration::from_secs(30);
/// How soon a tick waiting for the last batch to end (`overlap: queue`) is looked at again.
const QUEUE_RECHECK: Duration = Duration::from_secs(1);

pub struct Ticker {
    pub store: Arc<dyn Store>,
    pub compile: Compile,
    /// Wakes the ticker: a schedule was created, resumed or asked to run now.
    pub wake: Arc<Notify>,
    /// Called when a tick opened a batch: there is new work to claim.
    pub opened: Arc<dyn Fn() + Send + Sync>,
}

impl Ticker {
    pub async fn run(self, stop: CancellationToken) {
        loop {
            let sleep = match self.tick(now_micros()).await {
                Ok(sleep) => sleep,
                Err(err) => {
                    tracing::error!("handling schedules failed: {err:#}");
                    MAX_SLEEP
                }
            };
            tokio::select! {
                () = tokio::time::sleep(sleep) => {}
                () = self.wake.notified() => {}
                () = stop.cancelled() => return,
            }
        }
    }

    /// Handles every tick due at `now`; returns how long to sleep.
    pub async fn tick(&self, now: Micros) -> StoreResult<Duration> {
        let (due, next) = self.store.schedule_due(now).await?;
        let mut sleep = next.map_or(MAX_SLEEP, |next| {
            Duration::from_micros((next - now).max(0) as u64).min(MAX_SLEEP)
        });
        for schedule in due {
            let name = schedule.name.clone();
            match self.handle(schedule, now).await {
                Ok(Handled::Done) => {}
                Ok(Handled::Waiting) => sleep = sleep.min(QUEUE_RECHECK),
                Err(err) => tracing::error!(schedule = name, "a tick failed: {err:#}"),
            }
        }
        Ok(sleep)
    }

    async fn handle(&self, schedule: ScheduleInfo, now: Micros) -> anyhow::Result<Handled> {
        let Some(cursor) = schedule.next_due else {
            return Ok(Handled::Done);
        };
        let timing = Timing::new(&schedule.cron, &schedule.timezone).map_err(anyhow::Error::msg)?;
        let catch_up: CatchUp = schedule.catch_up.parse().map_err(anyhow::Error::msg)?;
        let overlap: Overlap = serde_json::from_value(serde_json::json!(schedule.overlap))?;
        let mut last_batch = schedule.last_batch;
        if overlap == Overlap::Queue && self.is_open(last_batch).await? {
            return Ok(Handled::Waiting);
        }
        let due = timing::due(&timing, cursor, now, catch_up);
        let mut cursor = cursor;
        let mut missed = due.missed;
        if due.fire.is_empty() {
            // Every tick due was missed: note them, and wait for the next.
            let fire = Fire {
                schedule: schedule.id,
                cursor: Some(cursor),
                next_due: due.next_due,
                tick: cursor,
                missed,
                result: TickResult::Skipped,
                detail: Some(format!("{missed} ticks missed while no node ran")),
                batch: None,
                now,
            };
            self.store.schedule_fire(fire).await?;
            return Ok(Handled::Done);
        }
        let last = due.fire.len() - 1;
        for (i, &tick) in due.fire.iter().enumerate() {
            let next_due = if i == last {
                due.next_due
            } else {
                timing.next_after(tick)
            };
            let fire = Fire {
                schedule: schedule.id,
                cursor: Some(cursor),
                next_due,
                tick,
                missed: std::mem::take(&mut missed),
                result: TickResult::Fired,
                detail: None,
                batch: None,
                now,
            };
            let blocked = overlap == Overlap::Skip && self.is_open(last_batch).await?;
            let handled = if blocked {
                let fire = Fire {
                    result: TickResult::Skipped,
                    detail: Some("the last tick's batch was still open".into()),
                    ..fire
                };
                self.store.schedule_fire(fire).await?
            } else {
                self.fire(&schedule, fire).await?
            };
            let Some(handled) = handled else {
                // Another node handled it first: it handles the rest too.
                return Ok(Handled::Done);
            };
            if handled.batch.is_some() {
                (self.opened)();
            }
            tracing::info!(
                schedule = schedule.name,
                tick,
                result = handled.result.as_str(),
                batch = handled.batch,
                "schedule tick"
            );
            last_batch = handled.batch.or(last_batch);
            match next_due {
                Some(next) => cursor = next,
                None => break,
            }
        }
        Ok(Handled::Done)
    }

    /// Opens the tick's batch; a plan the store refuses records the tick as failed.
    async fn fire(&self, schedule: &ScheduleInfo, fire: Fire) -> StoreResult<Option<Tick>> {
        let refused = match (self.compile)(schedule.clone(), fire.tick).await {
            Ok(batch) => {
                let opening = Fire {
                    batch: Some(batch),
                    ..fire.clone()
                };
                match self.store.schedule_fire(opening).await {
                    Err(err @ (StoreError::Invalid(_) | StoreError::NotFound { .. })) => {
                        err.to_string()
                    }
                    other => return other,
                }
            }
            Err(why) => why,
        };
        let failed = Fire {
            result: TickResult::Failed,
            detail: Some(refused),
            ..fire
        };
        self.store.schedule_fire(failed).await
    }

    /// Whether `batch` (the last tick's) has tasks that have not ended.
    async fn is_open(&self, batch: Option<BatchId>) -> StoreResult<bool> {
        let Some(batch) = batch else {
            return Ok(false);
        };
        match self.store.batch_open_count(batch).await {
            Ok(open) => Ok(open > 0),
            Err(StoreError::NotFound { .. }) => Ok(false),
            Err(err) => Err(err),
        }
    }
}

enum Handled {
    Done,
    /// A tick waits for the last tick's batch to end (`overlap: queue`).
    Waiting,
}
