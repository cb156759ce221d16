//! What every handler is given: the scheduler, the admin token, the permits for large
//! bodies and long requests, who may read `/metrics`, the queue's history, and the permit
//! to make a backup.

use std::sync::Arc;

use super::backup::Backups;
use super::body;
use super::history::History;
use super::long_polls::LongPolls;
use crate::scheduler::Scheduler;

#[derive(Clone)]
pub struct AppState {
    pub scheduler: Arc<Scheduler>,
    pub admin_token: Arc<str>,
    pub large_bodies: body::LargeBodies,
    pub long_polls: LongPolls,
    /// A token that opens `/metrics` alone, besides the admin's.
    pub metrics_token: Option<Arc<str>>,
    /// Whether `/metrics` answers without a token: on a listen address of its own.
    pub metrics_open: bool,
    /// The queue's recent samples, which `qhost serve` takes.
    pub history: History,
    /// The permit to make a backup of the store: one at a time.
    pub backups: Backups,
}

impl AppState {
    pub fn new(scheduler: Arc<Scheduler>, admin_token: &str) -> Self {
        AppState {
            scheduler,
            admin_token: admin_token.into(),
            large_bodies: body::LargeBodies::default(),
            long_polls: LongPolls::default(),
            metrics_token: None,
            metrics_open: false,
            history: History::default(),
            backups: Backups::default(),
        }
    }
}
