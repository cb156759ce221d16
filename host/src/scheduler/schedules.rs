//! Schedules as the scheduler offers them: created with their settings checked, their plan
//! compiled and admitted as a tick would be, and their first tick worked out; paused,
//! resumed (from the next tick after now: ticks while paused do not fire), deleted, and a
//! tick out of turn. Each tick's batch is compiled here from the plan and admitted through
//! the same checks as a submission ([`Scheduler::check_tasks`]), against the server's
//! bounds as they are at the tick.

use serde::Deserialize;

use super::{Error, Result, Scheduler, TaskRequest};
use crate::schedules::timing::{CatchUp, MAX_CATCH_UP_TASKS, Overlap, Timing};
use crate::store::*;

/// A schedule's plan: the settings of the batch each tick opens, and its tasks (as a
/// submission's).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SchedulePlan {
    /// Each tick's batch is named after the schedule and the tick; a name is taken and
    /// not used.
    #[serde(default, rename = "name")]
    #[schema(max_length = 200)]
    _name: Option<String>,
    /// The priority of its tasks that give none; higher first.
    #[serde(default)]
    priority: i32,
    /// At most this many of each tick's tasks run at once (0 holds them all); none: no
    /// limit.
    #[schema(format = Int64, minimum = 0, maximum = 4294967295_u64)]
    max_parallel: Option<u32>,
    #[serde(default)]
    failure_policy: FailurePolicy,
    /// Every tick's batch is opened with these tasks: at least one.
    #[schema(min_items = 1, max_items = 100000)]
    tasks: Vec<TaskRequest>,
}

/// The most schedules a store keeps.
pub const MAX_SCHEDULES: usize = 1000;
/// How many of a schedule's ticks a view shows.
const TICKS_SHOWN: usize = 20;

impl Scheduler {
    /// Creates a schedule; a plan that would not open a batch now (a module unknown, a
    /// task beyond the server's bounds) is refused at once, not at the first tick.
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
        let catch_up = spec.catch_up.parse::<CatchUp>().map_err(Error::Invalid)?;
        serde_json::from_value::<Overlap>(serde_json::json!(spec.overlap)).map_err(|_| {
            Error::Invalid(format!(
                "field `overlap`: `{}` is not one of `skip`, `queue` or `allow`",
                spec.overlap
            ))
        })?;
        let tasks = self
            .tick_batch(&spec.name, &spec.plan, now_micros())
            .await
            .map_err(|e| match e {
                Error::BadRequest(why) => Error::BadRequest(format!("field `plan`: {why}")),
                Error::Invalid(why) => Error::Invalid(format!("field `plan`: {why}")),
                other => other,
            })?
            .tasks
            .len();
        if let CatchUp::All(n) = catch_up
            && n as usize * tasks > MAX_CATCH_UP_TASKS
        {
            return Err(Error::Invalid(format!(
                "field `catch_up`: `all:{n}` of a plan of {tasks} tasks may open {} tasks at \
                 once; catching up may open at most {MAX_CATCH_UP_TASKS}",
                n as usize * tasks
            )));
        }
        if self.store.schedule_list().await?.len() >= MAX_SCHEDULES {
            return Err(Error::Conflict(format!(
                "there are {MAX_SCHEDULES} schedules, the most a store keeps: remove one first"
            )));
        }
        let now = now_micros();
        let created = self
            .store
            .schedule_create(spec, timing.next_after(now), now)
            .await?;
        self.schedules_wake.notify_one();
        Ok(created)
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
        let resumed = self
            .store
            .schedule_set_paused(name, false, timing.next_after(now_micros()))
            .await?;
        self.schedules_wake.notify_one();
        Ok(resumed)
    }

    pub async fn schedule_delete(&self, name: String) -> Result<()> {
        Ok(self.store.schedule_delete(name).await?)
    }

    /// The batch a tick at `tick` of schedule `name` opens from `plan`, its tasks admitted
    /// within the server's bounds as they are now; or why it cannot open one.
    pub(crate) async fn tick_batch(
        &self,
        name: &str,
        plan: &serde_json::Value,
        tick: Micros,
    ) -> Result<TickBatch> {
        let plan = SchedulePlan::deserialize(plan).map_err(|e| Error::BadRequest(e.to_string()))?;
        if plan.tasks.is_empty() {
            return Err(Error::BadRequest("it has no tasks".into()));
        }
        let at = jiff::Timestamp::from_microsecond(tick)
            .map(|t| t.to_string())
            .unwrap_or_else(|_| tick.to_string());
        let spec = BatchSpec {
            name: Some(format!("{name}@{at}")),
            priority: plan.priority,
            max_parallel: plan.max_parallel,
            failure_policy: plan.failure_policy,
            // A schedule grants its batches nothing: outbound HTTP is granted batch by batch.
            allow_http: Vec::new(),
            settings: Vec::new(),
            // Nor a webhook of its own: the server's hears of its end.
            webhook: None,
            quotas: self.config.batch_quotas,
            // Schedules are the admin's, and so are their batches.
            tenant: None,
        };
        let tasks = self.task_specs(None, plan.tasks).await?;
        let tasks = self.check_tasks(tasks)?;
        // Nobody holds a tick's handle: its batch is the admin's to see and steer.
        let mut handle_hash = [0u8; 32];
        getrandom::fill(&mut handle_hash)
            .map_err(|e| Error::Internal(anyhow::anyhow!("random handle: {e}")))?;
        Ok(TickBatch {
            spec,
            handle_hash,
            tasks,
        })
    }

    /// Opens a batch from the schedule's plan now, out of turn: the next tick stays as it
    /// was. A plan that no longer opens one (a module removed, a task beyond the server's
    /// bounds) is refused, and nothing is recorded.
    pub async fn schedule_run_now(&self, name: String) -> Result<Tick> {
        let schedule = self.store.schedule_get(name).await?;
        let now = now_micros();
        let batch = self
            .tick_batch(&schedule.name, &schedule.plan, now)
            .await
            .map_err(|e| match e {
                Error::BadRequest(why) | Error::Invalid(why) => {
                    Error::Invalid(format!("the plan no longer opens a batch: {why}"))
                }
                other => other,
            })?;
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
