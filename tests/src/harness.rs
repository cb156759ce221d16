//! A scheduler with a running node on a fresh store (SQLite, or a PostgreSQL schema of
//! its own), for tests that drive qhost through its library API.

use std::sync::Arc;
use std::time::Duration;

use qhost::runtime::{Digest, Runtime, RuntimeConfig};
use qhost::scheduler::node::Node;
use qhost::scheduler::rules::Span;
use qhost::scheduler::{Access, Scheduler, SchedulerConfig};
use qhost::store::postgres::PostgresStore;
use qhost::store::sqlite::SqliteStore;
use qhost::store::*;

use crate::pg::TestDb;

/// Which store driver a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

pub struct Harness {
    pub scheduler: Arc<Scheduler>,
    /// The scheduler's store, for tests that look behind the scheduler.
    pub store: Arc<dyn Store>,
    pub node: Option<Node>,
    pub dir: tempfile::TempDir,
    /// The PostgreSQL schema, dropped with the harness.
    pub db: Option<TestDb>,
}

impl Harness {
    /// A node with `workers` slots and `prefetch` extra claims, on SQLite.
    pub async fn start(workers: usize, prefetch: usize) -> Harness {
        Harness::start_on(Backend::Sqlite, workers, prefetch).await
    }

    /// A node with `workers` slots and `prefetch` extra claims, on `backend`.
    pub async fn start_on(backend: Backend, workers: usize, prefetch: usize) -> Harness {
        Harness::start_wrapped(backend, workers, prefetch, |store| store).await
    }

    /// Like [`Harness::start_on`], on the store `wrap` makes of the backend's (a
    /// [`crate::faulty::FaultyStore`], say).
    pub async fn start_wrapped(
        backend: Backend,
        workers: usize,
        prefetch: usize,
        wrap: impl FnOnce(Arc<dyn Store>) -> Arc<dyn Store>,
    ) -> Harness {
        Harness::start_configured(backend, workers, prefetch, wrap, |_| {}).await
    }

    /// Like [`Harness::start_wrapped`], with the node's settings changed by `configure`.
    pub async fn start_configured(
        backend: Backend,
        workers: usize,
        prefetch: usize,
        wrap: impl FnOnce(Arc<dyn Store>) -> Arc<dyn Store>,
        configure: impl FnOnce(&mut SchedulerConfig),
    ) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let (store, db): (Arc<dyn Store>, _) = match backend {
            Backend::Sqlite => (
                Arc::new(SqliteStore::open(&dir.path().join("qhost.db")).unwrap()),
                None,
            ),
            Backend::Postgres => {
                let db = TestDb::new().await;
                let store = PostgresStore::connect(&db.url, "test-node").await.unwrap();
                (Arc::new(store), Some(db))
            }
        };
        let store = wrap(store);
        let runtime = Arc::new(Runtime::new(RuntimeConfig::with_workers(workers)).unwrap());
        let mut config = SchedulerConfig::new("test-node");
        config.prefetch = prefetch;
        configure(&mut config);
        let scheduler = Scheduler::new(store.clone(), runtime, config);
        let node = Node::start(scheduler.clone()).await.unwrap();
        Harness {
            scheduler,
            store,
            node: Some(node),
            dir,
            db,
        }
    }

    pub async fn module(&self, guest: &str) -> Digest {
        let bytes = std::fs::read(crate::guest(guest)).unwrap();
        self.scheduler
            .module_add(bytes, Some(guest.into()), None)
            .await
            .unwrap()
            .digest
    }

    pub async fn open(&self, spec: BatchSpec) -> (BatchId, Access) {
        let (info, handle) = self.scheduler.batch_open(spec).await.unwrap();
        (info.id, Access::Handle(handle))
    }

    pub async fn wait(&self, batch: BatchId) -> BatchInfo {
        let info = self
            .scheduler
            .batch_wait(batch, Duration::from_secs(120))
            .await
            .unwrap();
        assert!(
            info.progress.is_done(),
            "batch {batch} did not end: {:?}",
            info.progress
        );
        info
    }

    /// Every attempt in the execution log.
    pub async fn log(&self) -> Vec<AttemptRecord> {
        let mut all = Vec::new();
        let mut after = None;
        loop {
            let page = self
                .scheduler
                .attempt_list(AttemptFilter {
                    after,
                    limit: Some(1000),
                    ..Default::default()
                })
                .await
                .unwrap();
            let Some(&(last, _)) = page.last() else { break };
            after = Some(last);
            all.extend(page.into_iter().map(|(_, a)| a));
        }
        all
    }

    pub async fn spans(&self) -> Vec<Span> {
        self.log().await.iter().map(Span::from).collect()
    }

    /// Waits until a task runs in a slot of this node; returns the live view then.
    pub async fn wait_until_running(&self) -> Vec<RunningTask> {
        loop {
            let running = self.scheduler.running_now().await.unwrap();
            if running.iter().any(|r| r.slot.is_some()) {
                return running;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    pub async fn stop(mut self) {
        if let Some(node) = self.node.take() {
            node.stop(Duration::from_secs(30)).await.unwrap();
        }
        // The store's connections close before its schema is dropped.
        let db = self.db.take();
        drop(self);
        drop(db);
    }
}
