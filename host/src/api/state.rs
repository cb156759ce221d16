//! What every handler is given: the scheduler, the admin token, the permits for large
//! bodies, the schedule ticker's wake-up and the queue's history.

use std::sync::Arc;

use super::body;
use super::history::History;
use crate::scheduler::Scheduler;

#[derive(Clone)]
pub struct AppState {
    pub scheduler: Arc<Scheduler>,
    pub admin_token: Arc<str>,
    pub large_bodies: body::LargeBodies,
    /// Wakes this node's schedule ticker: a schedule was created or resumed.
    pub schedules_wake: Arc<tokio::sync::Notify>,
    /// The queue's recent samples, which `qhost serve` takes.
    pub history: History,
}

impl AppState {
    pub fn new(scheduler: Arc<Scheduler>, admin_token: &str) -> Self {
        AppState {
            scheduler,
            admin_token: admin_token.into(),
            large_bodies: body::LargeBodies::default(),
            schedules_wake: Default::default(),
            history: History::default(),
        }
    }
}
