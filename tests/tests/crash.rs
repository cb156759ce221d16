//! kill -9 of a process running tasks, then a restart: nothing is lost, the lost attempts
//! are recorded, their tasks run again, and no rule is broken across the crash.

use std::path::Path;
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use qhost::runtime::{Mount, Outcome, Runtime, RuntimeConfig};
use qhost::scheduler::rules::{self, Span};
use qhost::scheduler::{Scheduler, SchedulerConfig};
use qhost::store::sqlite::SqliteStore;
use qhost::store::*;

fn node(db: &Path, out: &Path, until_done: bool) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_test-node"));
    command.arg(db).arg("node-1").arg("2").arg(out);
    if until_done {
        command.arg("--until-done");
    }
    command.spawn().expect("starting test-node")
}

/// A scheduler named `node` of one slot on the SQLite database `db`, offering `mount`, with
/// the `misbehave` guest added; returns it and the guest's digest.
async fn with_misbehave(
    db: &Path,
    mount: Mount,
    node: &str,
) -> (Arc<Scheduler>, qhost::runtime::Digest) {
    let mut config = RuntimeConfig::with_workers(1);
    config.mounts = vec![mount];
    let scheduler = Scheduler::new(
        Arc::new(SqliteStore::open(db).unwrap()),
        Arc::new(Runtime::new(config).unwrap()),
        SchedulerConfig::new(node),
    );
    let bytes = std::fs::read(qhost_tests::guest("misbehave")).unwrap();
    let module = scheduler
        .module_add(bytes, None, None)
        .await
        .unwrap()
        .digest;
    (scheduler, module)
}

/// Waits for `count` attempts to have started (each leaves a marker file).
fn wait_for_markers(out: &Path, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_dir(out).unwrap().count() < count {
        assert!(
            Instant::now() < deadline,
            "the node never started {count} tasks"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("qhost.db");
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();

    let tasks: Vec<TaskId> = {
        let mount = Mount {
            name: "out".into(),
            dir: out.clone(),
            writable: true,
        };
        let (scheduler, module) = with_misbehave(&db, mount, "setup").await;
        let (batch, _) = scheduler.batch_open(BatchSpec::default()).await.unwrap();
        let specs = (0..12)
            .map(|i| TaskSpec {
                order: i / 4,
                group: (i % 2 == 0).then(|| "shared".to_string()),
                mounts: vec![qhost::runtime::MountGrant {
                    name: "out".into(),
                    writable: true,
                }],
                backoff: Duration::ZERO,
                ..TaskSpec::new(module, "mark:150")
            })
            .collect();
        scheduler
            .submit(&qhost::scheduler::Access::Admin, batch.id, specs)
            .await
            .unwrap()
    };

    let mut first = node(&db, &out, false);
    wait_for_markers(&out, 2);
    first.kill().unwrap();
    first.wait().unwrap();

    let mut second = node(&db, &out, true);
    let status = second.wait().unwrap();
    assert!(status.success(), "the restarted node failed: {status}");

    let store = SqliteStore::open(&db).unwrap();
    for &task in &tasks {
        let info = store.task_get(task).await.unwrap();
        assert_eq!(
            info.state,
            TaskState::Succeeded,
            "task {task}: {:?}",
            info.error
        );
    }
    let log: Vec<AttemptRecord> = store
        .attempt_list(AttemptFilter::default())
        .await
        .unwrap()
        .into_iter()
        .map(|(_, a)| a)
        .collect();
    let lost: Vec<_> = log.iter().filter(|a| a.outcome == Outcome::Lost).collect();
    assert!(!lost.is_empty(), "no attempt was recorded lost");
    assert!(
        lost.iter()
            .all(|a| a.error.as_deref().unwrap().contains("restarted"))
    );
    for &task in &tasks {
        let succeeded = log
            .iter()
            .filter(|a| a.task == task && a.outcome == Outcome::Succeeded)
            .count();
        assert_eq!(succeeded, 1, "task {task} succeeded {succeeded} times");
    }
    // The lost attempts ran again; those that had started (the others were claimed ahead)
    // left a marker.
    for attempt in &lost {
        assert!(
            log.iter()
                .any(|a| a.task == attempt.task && a.attempt == attempt.attempt + 1)
        );
    }
    let started = lost
        .iter()
        .filter(|a| out.join(format!("{}-{}", a.task, a.attempt)).exists())
        .count();
    assert!(started >= 1, "none of the lost attempts had started");
    let spans: Vec<Span> = log.iter().map(Span::from).collect();
    rules::check_gates(&spans).unwrap();
    rules::check_group_limits(&spans, |_| 1).unwrap();
    let ran: Vec<Span> = log
        .iter()
        .filter(|a| a.outcome != Outcome::Lost)
        .map(Span::from)
        .collect();
    rules::check_parallelism(&ran, 2).unwrap();
}

/// A failure on the host's side (here an operator's mount directory that went away) is
/// recorded as the host's, not the guest's, and the record names no host path: the
/// tenant reading it learns nothing of the operator's file system.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_failure_is_told_apart_and_names_no_host_path() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("operator-secret-dir");
    std::fs::create_dir(&secret).unwrap();
    let mount = Mount {
        name: "data".into(),
        dir: secret.clone(),
        writable: false,
    };
    let (scheduler, module) = with_misbehave(&dir.path().join("qhost.db"), mount, "host").await;
    std::fs::remove_dir(&secret).unwrap();
    let node = qhost::scheduler::node::Node::start(scheduler.clone())
        .await
        .unwrap();
    let (batch, _) = scheduler.batch_open(BatchSpec::default()).await.unwrap();
    let task = TaskSpec {
        mounts: vec![qhost::runtime::MountGrant {
            name: "data".into(),
            writable: false,
        }],
        max_attempts: 1,
        ..TaskSpec::new(module, "ok")
    };
    let id = scheduler
        .submit(&qhost::scheduler::Access::Admin, batch.id, vec![task])
        .await
        .unwrap()[0];
    scheduler
        .batch_wait(batch.id, Duration::from_secs(60))
        .await
        .unwrap();
    let error = scheduler.task_get(id).await.unwrap().error.unwrap();
    assert!(error.starts_with("host error"), "{error}");
    assert!(
        !error.contains("operator-secret-dir") && !error.contains(dir.path().to_str().unwrap()),
        "the record names a host path: {error}"
    );
    node.stop(Duration::from_secs(5)).await.unwrap();
}
