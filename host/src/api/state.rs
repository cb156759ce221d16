//! What every handler is given: the scheduler, the admin token, the permits for large
//! bodies and the queue's history.

use std::sync::Arc;

use super::body;
use super::history::History;
use crate::scheduler::Scheduler;

#[derive(Clone)]
pub struct AppState {
    pub scheduler: Arc<Scheduler>,
    pub admin_token: Arc<str>,
    pub large_bodies: body::LargeBodies,
    /// The queue's recent samples, which `qhost serve` takes.
    pub history: History,
}

impl AppState {
    pub fn new(scheduler: Arc<Scheduler>, admin_token: &str) -> Self {
        AppState {
            scheduler,
            admin_token: admin_token.into(),
            large_bodies: body::LargeBodies::default(),
            history: History::default(),
        }
    }
}
