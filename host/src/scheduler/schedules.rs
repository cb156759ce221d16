//! Schedules as the scheduler offers them: created with their settings checked and their
//! first tick worked out; paused, resumed (from the next tick after now: ticks while paused
//! do not fire), deleted, and a tick out of turn.

use super::{Error, Result, Scheduler};
use crate::schedules::timing::{CatchUp, Overlap, Timing};
use crate::store::*;

/// The most schedules a store keeps.
pub const MAX_SCHEDULES: usize = 1000;
/// How many of a schedule's ticks a view shows.
const TICKS_SHOWN: usize = 20;

impl Scheduler {
    /// Creates a schedule whose `plan` the caller has checked (it compiles).
    pub async fn schedule_create(&self, spec: ScheduleSpec) -> Result<ScheduleInfo> {
        let name_ok = !spec.name.is_empty()
            && spec.name.len() <= 100
            && spec
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !name_ok {
            return Err(Error::Invalid(format!(
                "field `name`: `{}` must be 1 to 100 letters, digits, `-`, `_` or `.`",
                spec.name
            )));
        }
        let timing = Timing::new(&spec.cron, &spec.timezone).map_err(Error::Invalid)?;
        spec.catch_up.parse::<CatchUp>().map_err(Error::Invalid)?;
        serde_json::from_value::<Overlap>(serde_json::json!(spec.overlap)).map_err(|_| {
            Error::Invalid(format!(
                "field `overlap`: `{}` is not one of `skip`, `queue` or `allow`",
                spec.overlap
            ))
        })?;
        if self.store.schedule_list().await?.len() >= MAX_SCHEDULES {
            return Err(Error::Conflict(format!(
                "there are {MAX_SCHEDULES} schedules, the most a store keeps: remove one first"
            )));
        }
        let now = now_micros();
        Ok(self
            .store
            .schedule_create(spec, timing.next_after(now), now)
            .await?)
    }

    pub async fn schedule_list(&self) -> Result<Vec<ScheduleInfo>> {
        Ok(self.store.schedule_list().await?)
    }

    /// A schedule with its last ticks, newest first.
    pub async fn schedule_get(&self, name: String) -> Result<(ScheduleInfo, Vec<Tick>)> {
        let schedule = self.store.schedule_get(name).await?;
        let ticks = self.store.schedule_ticks(schedule.id, TICKS_SHOWN).await?;
        Ok((schedule, ticks))
    }

    pub async fn schedule_pause(&self, name: String) -> Result<ScheduleInfo> {
        let schedule = self.store.schedule_get(name.clone()).await?;
        Ok(self
            .store
            .schedule_set_paused(name, true, schedule.next_due)
            .await?)
    }

    /// Resumes from the first tick after now.
    pub async fn schedule_resume(&self, name: String) -> Result<ScheduleInfo> {
        let schedule = self.store.schedule_get(name.clone()).await?;
        let timing = Timing::new(&schedule.cron, &schedule.timezone).map_err(Error::Invalid)?;
        Ok(self
            .store
            .schedule_set_paused(name, false, timing.next_after(now_micros()))
            .await?)
    }

    pub async fn schedule_delete(&self, name: String) -> Result<()> {
        Ok(self.store.schedule_delete(name).await?)
    }

    /// Opens `batch` for the schedule now, out of turn: the next tick stays as it was.
    pub async fn schedule_run_now(
        &self,
        schedule: &ScheduleInfo,
        batch: TickBatch,
    ) -> Result<Tick> {
        let now = now_micros();
        let fire = Fire {
            schedule: schedule.id,
            cursor: None,
            next_due: None,
            tick: now,
            missed: 0,
            result: TickResult::Fired,
            detail: Some("run now".into()),
            batch: Some(batch),
            now,
        };
        let tick =
            self.store.schedule_fire(fire).await?.ok_or_else(|| {
                Error::NotFound(format!("schedule {} does not exist", schedule.name))
            })?;
        self.wake.notify_one();
        Ok(tick)
    }
}
