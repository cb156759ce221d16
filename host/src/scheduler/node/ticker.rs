//! The ticker: a node's loop that handles its schedules' ticks as they come due. Each due
//! tick's batch is compiled from the schedule's plan and admitted by the scheduler, like any
//! submission, then handed to the store, which handles the tick once across every node.
//! After handling the due ticks it reads the schedules again and sleeps until the earliest
//! next tick of them all as they are then (or a wake-up: a schedule created, resumed).

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::scheduler::{Error, Scheduler};
use crate::schedules::timing::{self, CatchUp, Overlap, Timing};
use crate::store::*;

/// The longest the ticker sleeps: schedules another node created or resumed are seen
/// within it.
const MAX_SLEEP: Duration = Duration::from_secs(30);
/// How soon a tick waiting for the last batch to end (`overlap: queue`), or one the store
/// could not take, is looked at again.
const RECHECK: Duration = Duration::from_secs(1);

/// Handles schedules' ticks for a node.
pub struct Ticker {
    scheduler: Arc<Scheduler>,
}

impl Ticker {
    pub fn new(scheduler: Arc<Scheduler>) -> Self {
        Ticker { scheduler }
    }

    pub async fn run(self, stop: CancellationToken) {
        loop {
            let next = match self.tick(now_micros()).await {
                Ok(next) => next,
                Err(err) => {
                    tracing::error!("handling schedules failed: {err:#}");
                    None
                }
            };
            // From the time the ticks were handled: handling takes time of its own.
            let sleep = next.map_or(MAX_SLEEP, |next| until(next, now_micros()));
            tokio::select! {
                () = tokio::time::sleep(sleep) => {}
                () = self.scheduler.schedules_wake.notified() => {}
                () = stop.cancelled() => return,
            }
        }
    }

    /// Handles every tick due at `now`; returns when to look again: the earliest next tick
    /// of every schedule once these are handled, sooner if a tick waits. None: no schedule
    /// has a next tick.
    pub async fn tick(&self, now: Micros) -> StoreResult<Option<Micros>> {
        let store = &self.scheduler.store;
        let (due, _) = store.schedule_due(now).await?;
        let mut recheck = false;
        for schedule in due {
            let name = schedule.name.clone();
            match self.handle(schedule, now).await {
                Ok(Handled::Done) => {}
                Ok(Handled::Waiting) => recheck = true,
                Err(err) => {
                    tracing::error!(schedule = name, "a tick failed: {err:#}");
                    recheck = true;
                }
            }
        }
        // Read again: the ticks just handled moved their schedules' next ticks on, and the
        // earliest may well be one of those.
        let (still_due, next) = store.schedule_due(now).await?;
        let soon = (recheck || !still_due.is_empty()).then(|| now + micros(RECHECK));
        Ok(match (next, soon) {
            (Some(next), Some(soon)) => Some(next.min(soon)),
            (next, soon) => next.or(soon),
        })
    }

    async fn handle(&self, schedule: ScheduleInfo, now: Micros) -> anyhow::Result<Handled> {
        let store = &self.scheduler.store;
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
            store.schedule_fire(fire).await?;
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
                store.schedule_fire(fire).await?
            } else {
                self.fire(&schedule, fire).await?
            };
            let Some(handled) = handled else {
                // Another node handled it first: it handles the rest too.
                return Ok(Handled::Done);
            };
            if handled.batch.is_some() {
                // New work to claim.
                self.scheduler.wake.notify_one();
            }
            tracing::info!(
                schedule = schedule.name,
                tick,
                result = handled.result.as_str(),
                batch = handled.batch,
                detail = handled.detail.as_deref(),
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

    /// Opens the tick's batch; a plan that no longer opens one (a module name that names
    /// none, a task beyond the server's bounds) records the tick as failed, saying why.
    async fn fire(&self, schedule: &ScheduleInfo, fire: Fire) -> anyhow::Result<Option<Tick>> {
        let store = &self.scheduler.store;
        let compiled = self
            .scheduler
            .tick_batch(&schedule.name, &schedule.plan, fire.tick)
            .await;
        let refused = match compiled {
            Ok(batch) => {
                let opening = Fire {
                    batch: Some(batch),
                    ..fire.clone()
                };
                match store.schedule_fire(opening).await {
                    Err(err @ (StoreError::Invalid(_) | StoreError::NotFound { .. })) => {
                        err.to_string()
                    }
                    other => return Ok(other?),
                }
            }
            Err(Error::Internal(err)) => return Err(err.context("compiling the plan")),
            Err(why) => why.to_string(),
        };
        let failed = Fire {
            result: TickResult::Failed,
            detail: Some(format!("the plan opens no batch: {refused}")),
            ..fire
        };
        Ok(store.schedule_fire(failed).await?)
    }

    /// Whether `batch` (the last tick's) has tasks that have not ended.
    async fn is_open(&self, batch: Option<BatchId>) -> StoreResult<bool> {
        let Some(batch) = batch else {
            return Ok(false);
        };
        match self.scheduler.store.batch_open_count(batch).await {
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

fn micros(duration: Duration) -> Micros {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}

/// How long from `now` until `at`, at most [`MAX_SLEEP`].
fn until(at: Micros, now: Micros) -> Duration {
    Duration::from_micros(at.saturating_sub(now).max(0) as u64).min(MAX_SLEEP)
}
