//! Hostile-guest soak: 1,000 tasks where every tenth is hostile (it spins, bombs memory,
//! overflows its stack, floods stdout or the log, returns a huge output or a huge error),
//! drained by one node of two slots, while normal tasks are submitted one at a time beside
//! them. Reports the host's peak memory, how long the normal tasks took from submission to
//! end (p50, p99) and how they ran, and how each hostile kind ended; the run itself shows
//! the host never crashed.
//!
//!     cargo bench -p qhost-tests --bench hostile
//!
//! Run it with RUST_BACKTRACE unset.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use qhost::runtime::{Outcome, Runtime, RuntimeConfig, TaskLimits};
use qhost::scheduler::node::Node;
use qhost::scheduler::{Access, Scheduler, SchedulerConfig};
use qhost::store::sqlite::SqliteStore;
use qhost::store::{AttemptFilter, BatchSpec, TaskSpec};

const TASKS: usize = 1000;
/// Normal tasks submitted one at a time while the mix drains.
const PROBES: usize = 100;
/// What each hostile kind asks of the `misbehave` guest, and the outcome it must end in.
const HOSTILE: [(&str, &str, Outcome); 7] = [
    ("spin", "spin", Outcome::Timeout),
    ("memory bomb", "alloc", Outcome::MemoryLimit),
    ("stack overflow", "recurse", Outcome::Trap),
    ("stdout flood", "stdout:10000000", Outcome::Succeeded),
    ("log flood", "flood", Outcome::Timeout),
    ("huge output", "output:33554432", Outcome::OutputTooLarge),
    ("huge error", "error:33554432", Outcome::GuestError),
];

/// The host's peak resident memory so far, from the kernel.
fn peak_rss() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .map(|v| v.trim().to_owned())
        .unwrap_or_else(|| "unknown".into())
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() - 1) * p / 100]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    qhost::cli::quiet_library_backtraces();
    if std::env::var_os("RUST_BACKTRACE").is_some() {
        eprintln!("warning: RUST_BACKTRACE is set; figures will be lower than they should");
    }
    let data = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(&data.path().join("qhost.db")).unwrap());
    let mut config = RuntimeConfig::with_workers(2);
    config.cache_dir = Some(data.path().join("artifacts"));
    let runtime = Arc::new(Runtime::new(config).unwrap());
    let scheduler = Scheduler::new(store, runtime, SchedulerConfig::new("soak"));
    let bytes = std::fs::read(qhost_tests::guest("misbehave")).unwrap();
    let module = scheduler
        .module_add(bytes, None, None)
        .await
        .unwrap()
        .digest;
    let node = Node::start(scheduler.clone()).await.unwrap();
    println!("before: host peak RSS {}", peak_rss());

    let limits = TaskLimits {
        timeout: Duration::from_millis(500),
        ..TaskLimits::default()
    };
    let task = |input: &str| TaskSpec {
        limits,
        max_attempts: 1,
        ..TaskSpec::new(module, input.as_bytes().to_vec())
    };
    let kinds: Vec<Option<usize>> = (0..TASKS)
        .map(|i| (i % 10 == 9).then_some(i / 10 % HOSTILE.len()))
        .collect();
    let specs = kinds
        .iter()
        .map(|kind| task(kind.map_or("ok", |k| HOSTILE[k].1)))
        .collect();
    let started = Instant::now();
    let (mix, _) = scheduler.batch_open(BatchSpec::default()).await.unwrap();
    let ids = scheduler
        .submit(&Access::Admin, mix.id, specs)
        .await
        .unwrap();

    // Normal tasks beside the mix, each its own batch (as `POST /v1/tasks` makes).
    let mut probes = Vec::with_capacity(PROBES);
    for _ in 0..PROBES {
        let submitted = Instant::now();
        let (batch, _) = scheduler.batch_open(BatchSpec::default()).await.unwrap();
        scheduler
            .submit(&Access::Admin, batch.id, vec![task("ok")])
            .await
            .unwrap();
        let info = scheduler
            .batch_wait(batch.id, Duration::from_secs(120))
            .await
            .unwrap();
        assert_eq!(info.progress.succeeded, 1, "a probe failed: {info:?}");
        probes.push(submitted.elapsed());
    }
    let info = scheduler
        .batch_wait(mix.id, Duration::from_secs(600))
        .await
        .unwrap();
    let drained = started.elapsed();
    assert!(info.progress.is_done(), "the mix did not end: {info:?}");

    let log = scheduler
        .attempt_list(AttemptFilter {
            batch: Some(mix.id),
            limit: Some(10 * TASKS),
            ..Default::default()
        })
        .await
        .unwrap();
    let by_task: std::collections::HashMap<i64, Outcome> =
        log.iter().map(|(_, a)| (a.task, a.outcome)).collect();
    let mut ended: BTreeMap<&str, BTreeMap<String, usize>> = BTreeMap::new();
    let mut normal_runs = Vec::new();
    for (id, kind) in ids.iter().zip(&kinds) {
        let outcome = by_task[id];
        let name = kind.map_or("normal", |k| HOSTILE[k].0);
        *ended
            .entry(name)
            .or_default()
            .entry(outcome.to_string())
            .or_default() += 1;
        if let Some(k) = kind {
            assert_eq!(outcome, HOSTILE[*k].2, "{name} ended {outcome}");
        } else {
            assert_eq!(outcome, Outcome::Succeeded, "a normal task ended {outcome}");
        }
    }
    let normal: std::collections::HashSet<i64> = ids
        .iter()
        .zip(&kinds)
        .filter(|(_, kind)| kind.is_none())
        .map(|(id, _)| *id)
        .collect();
    for (_, a) in &log {
        if normal.contains(&a.task) {
            normal_runs.push(Duration::from_micros((a.ended_at - a.started_at) as u64));
        }
    }
    node.stop(Duration::from_secs(10)).await.unwrap();

    probes.sort();
    normal_runs.sort();
    println!(
        "{TASKS} tasks ({} hostile) drained in {:.2} s by 2 slots; the host never crashed",
        kinds.iter().filter(|k| k.is_some()).count(),
        drained.as_secs_f64()
    );
    for (kind, outcomes) in &ended {
        println!("  {kind}: {outcomes:?}");
    }
    println!(
        "normal tasks submitted beside the mix, submission to end: p50 {:?}, p99 {:?} ({PROBES} tasks)",
        percentile(&probes, 50),
        percentile(&probes, 99)
    );
    println!(
        "normal tasks of the mix, run time: p50 {:?}, p99 {:?}",
        percentile(&normal_runs, 50),
        percentile(&normal_runs, 99)
    );
    println!("after: host peak RSS {}", peak_rss());
}
