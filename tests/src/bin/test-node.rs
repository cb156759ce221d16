//! A qhost node in a process of its own, for the crash tests: runs the tasks of a SQLite
//! store until it is killed, or with `--until-done` until no task is left, then stops
//! gracefully.
//!
//!     test-node DB NODE WORKERS OUT_DIR [--until-done]
//!
//! OUT_DIR is mounted read-write for the tasks as `/out`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use qhost::runtime::{Mount, Runtime, RuntimeConfig};
use qhost::scheduler::node::Node;
use qhost::scheduler::{Scheduler, SchedulerConfig};
use qhost::store::Store;
use qhost::store::sqlite::SqliteStore;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    anyhow::ensure!(
        args.len() >= 5,
        "usage: test-node DB NODE WORKERS OUT_DIR [--until-done]"
    );
    let store = Arc::new(SqliteStore::open(&PathBuf::from(&args[1]))?);
    let mut runtime = RuntimeConfig::with_workers(args[3].parse()?);
    runtime.mounts = vec![Mount {
        name: "out".into(),
        dir: PathBuf::from(&args[4]),
        writable: true,
    }];
    let scheduler = Scheduler::new(
        store.clone(),
        Arc::new(Runtime::new(runtime)?),
        SchedulerConfig::new(&args[2]),
    );
    let node = Node::start(scheduler.clone()).await?;
    let mut events = scheduler.subscribe();
    loop {
        if args.get(5).map(String::as_str) == Some("--until-done")
            && store.task_counts().await?.is_done()
        {
            break;
        }
        events.recv().await?;
    }
    node.stop(Duration::from_secs(10)).await
}
