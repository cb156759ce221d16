//! `GET /v1/status/history`: the queue over the last hour, for the dashboard's charts.
//! Each `qhost serve` samples the store's counters every [`INTERVAL`] into memory and
//! keeps an hour of samples; the ended counters are the store's, so every node's work
//! counts, but a node shows only what it sampled since it started.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use super::AppState;
use super::auth::Admin;
use super::error::ApiResult;
use crate::scheduler::Scheduler;
use crate::store::{EndedTotals, Micros, now_micros};

/// How often the queue is sampled.
pub const INTERVAL: Duration = Duration::from_secs(10);
/// How many samples are kept: an hour's.
pub const KEPT: usize = 360;

/// The queue at one moment.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Sample {
    /// When it was taken, in microseconds since the epoch.
    pub at: Micros,
    /// The store's counters of tasks ended so far: throughput is the rise between two
    /// samples.
    pub ended_total: EndedTotals,
    /// Tasks ready then (waiting only for a free slot).
    pub ready: u64,
    /// Seconds since the oldest claimable task then was submitted; none when no task was
    /// claimable.
    #[schema(required = true)]
    pub oldest_ready_age_seconds: Option<f64>,
}

/// The samples this node took, oldest first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct QueueHistory {
    /// Seconds between samples.
    pub interval_seconds: u64,
    /// When this node started sampling: there is no history before it.
    pub since: Micros,
    /// At most an hour of samples, oldest first.
    pub samples: Vec<Sample>,
}

/// The samples kept, shared by the sampler and the route.
#[derive(Clone)]
pub struct History {
    since: Micros,
    samples: Arc<Mutex<VecDeque<Sample>>>,
}

impl Default for History {
    fn default() -> Self {
        History {
            since: now_micros(),
            samples: Default::default(),
        }
    }
}

impl History {
    fn push(&self, sample: Sample) {
        let mut samples = self.samples.lock().expect("history lock");
        if samples.len() == KEPT {
            samples.pop_front();
        }
        samples.push_back(sample);
    }

    /// Samples the queue now, then every [`INTERVAL`], until `stop` is cancelled.
    pub async fn sample(self, scheduler: Arc<Scheduler>, stop: CancellationToken) {
        let mut every = tokio::time::interval(INTERVAL);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = every.tick() => {}
            }
            match scheduler.queue_stats().await {
                Ok(stats) => {
                    let at = now_micros();
                    self.push(Sample {
                        at,
                        ended_total: stats.ended_total,
                        ready: stats.counts.ready,
                        oldest_ready_age_seconds: stats.oldest_ready_age(at),
                    });
                }
                // A gap in the charts; the next sample may do.
                Err(e) => tracing::warn!("sampling the queue for its history: {e:#}"),
            }
        }
    }
}

/// The queue over the last hour: ended counters, ready tasks and the oldest ready
/// task's age, sampled every 10 seconds by the node that answers, since it started.
#[utoipa::path(
    get,
    path = "/status/history",
    operation_id = "status_history",
    tag = "observe",
    responses((status = 200, description = "The samples, oldest first", body = QueueHistory)),
    security(("admin_token" = [])),
)]
pub async fn history(State(state): State<AppState>, _: Admin) -> ApiResult<Json<QueueHistory>> {
    let history = &state.history;
    let samples = history
        .samples
        .lock()
        .expect("history lock")
        .iter()
        .cloned()
        .collect();
    Ok(Json(QueueHistory {
        interval_seconds: INTERVAL.as_secs(),
        since: history.since,
        samples,
    }))
}
