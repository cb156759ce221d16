//! The scheduler under real concurrency, with real components: the articles' scenarios,
//! and randomized workloads whose execution logs are checked against every rule. Every
//! test runs on both store drivers (modules `sqlite` and `postgres` at the end).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use std::sync::Arc;

use qhost::runtime::limits::LOG_LINE_COST;
use qhost::runtime::{Outcome, TaskLimits};
use qhost::scheduler::rules::{self, Span};
use qhost::scheduler::{Access, Error, Resource};
use qhost::store::*;
use qhost_tests::Rng;
use qhost_tests::faulty::FaultyStore;
use qhost_tests::harness::{Backend, Harness};

fn sleep_task(module: qhost::runtime::Digest, millis: u64, order: i64) -> TaskSpec {
    TaskSpec {
        order,
        ..TaskSpec::new(module, millis.to_string())
    }
}

/// (a) One batch with orders 100 x4, 200 x2, 300 x1, 400 x2, 500 x1 of sleep tasks on five
/// slots: each order's tasks run together, and never with another order's. Each sleeps
/// 400 ms, so that the tasks of an order overlap even where a loaded machine starts one
/// of them tens of milliseconds after the others (60 ms tasks missed, seen once).
async fn ordered_batch_runs_order_by_order(backend: Backend) {
    let h = Harness::start_on(backend, 5, 0).await;
    let sleep = h.module("sleep").await;
    let (batch, access) = h.open(BatchSpec::default()).await;
    let plan = [(100, 4), (200, 2), (300, 1), (400, 2), (500, 1)];
    let tasks = plan
        .iter()
        .flat_map(|&(order, count)| (0..count).map(move |_| order))
        .map(|order| sleep_task(sleep, 400, order))
        .collect();
    h.scheduler.submit(&access, batch, tasks).await.unwrap();
    let info = h.wait(batch).await;
    assert_eq!(info.progress.succeeded, 10);

    let spans = h.spans().await;
    rules::check_gates(&spans).unwrap();
    for &(order, count) in &plan {
        let same: Vec<&Span> = spans.iter().filter(|s| s.order == order).collect();
        assert_eq!(same.len(), count);
        for a in &same {
            for b in &same {
                assert!(
                    a.start < b.end && b.start < a.end,
                    "order {order}: tasks {} and {} did not overlap",
                    a.task,
                    b.task
                );
            }
        }
    }
    h.stop().await;
}

/// (c) 100 long tasks queued on one slot; while the first runs, every tenth is raised in
/// priority: the raised ones run next, highest first, then the rest in submission order.
async fn raised_tasks_run_next_highest_first(backend: Backend) {
    let h = Harness::start_on(backend, 1, 0).await;
    let sleep = h.module("sleep").await;
    let (batch, access) = h.open(BatchSpec::default()).await;
    let mut tasks = vec![sleep_task(sleep, 1500, 0)];
    tasks.extend((2..=100).map(|_| sleep_task(sleep, 2, 0)));
    let ids = h.scheduler.submit(&access, batch, tasks).await.unwrap();

    // Wait for the first task to be running.
    while h.store.running_list().await.unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for n in (10..=100).step_by(10) {
        h.scheduler
            .task_set_priority(&access, ids[n - 1], n as i32 / 10)
            .await
            .unwrap();
    }
    h.wait(batch).await;

    let mut log = h.log().await;
    log.sort_by_key(|a| a.started_at);
    let started: Vec<usize> = log
        .iter()
        .map(|a| ids.iter().position(|&id| id == a.task).unwrap() + 1)
        .collect();
    let mut expected = vec![1];
    expected.extend((10..=100).rev().step_by(10));
    expected.extend((2..100).filter(|n| n % 10 != 0));
    assert_eq!(started, expected);
    h.stop().await;
}

/// (b) with real runs: groups `id % 4` for odd ids, none for even; the group-held tasks are
/// skipped, never waited on, and no two tasks of a group ever overlap.
async fn group_held_tasks_never_hold_up_others(backend: Backend) {
    let h = Harness::start_on(backend, 4, 4).await;
    let sleep = h.module("sleep").await;
    let (batch, access) = h.open(BatchSpec::default()).await;
    let tasks = (1..=12)
        .map(|i| TaskSpec {
            group: (i % 2 == 1).then(|| format!("g{}", i % 4)),
            ..sleep_task(sleep, 40, 0)
        })
        .collect();
    let ids = h.scheduler.submit(&access, batch, tasks).await.unwrap();
    h.wait(batch).await;
    let spans = h.spans().await;
    rules::check_group_limits(&spans, |_| 1).unwrap();
    rules::check_parallelism(&spans, 4).unwrap();
    // Every ungrouped task started before the last task of the first group ran.
    let start = |n: usize| spans.iter().find(|s| s.task == ids[n - 1]).unwrap().start;
    let end = |n: usize| spans.iter().find(|s| s.task == ids[n - 1]).unwrap().end;
    for even in (2..=12).step_by(2) {
        assert!(
            start(even) < end(9).max(end(11)),
            "task {even} waited behind a group"
        );
    }
    h.stop().await;
}

async fn handles_guard_their_batches(backend: Backend) {
    let h = Harness::start_on(backend, 1, 0).await;
    let sleep = h.module("sleep").await;
    let (mine, my_access) = h.open(BatchSpec::default()).await;
    let (theirs, _) = h.open(BatchSpec::default()).await;
    let err = h
        .scheduler
        .submit(&my_access, theirs, vec![sleep_task(sleep, 1, 0)])
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Forbidden(Resource::Batch(b)) if b == theirs),
        "{err}"
    );
    let forged = Access::Handle(format!("qhb_{mine}_{}", "0".repeat(64)));
    let err = h
        .scheduler
        .submit(&forged, mine, vec![sleep_task(sleep, 1, 0)])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err}");
    h.scheduler
        .submit(&Access::Admin, theirs, vec![sleep_task(sleep, 1, 0)])
        .await
        .unwrap();
    h.stop().await;
}

async fn bad_submissions_are_refused_whole(backend: Backend) {
    let h = Harness::start_on(backend, 1, 0).await;
    let echo = h.module("echo").await;
    let (batch, access) = h.open(BatchSpec::default()).await;
    let mut absurd = TaskSpec::new(echo, "x");
    absurd.limits.memory = 1 << 50;
    let zero_attempts = TaskSpec {
        max_attempts: 0,
        ..TaskSpec::new(echo, "x")
    };
    let unknown_mount = TaskSpec {
        mounts: vec![qhost::runtime::MountGrant {
            name: "etc".into(),
            writable: false,
        }],
        ..TaskSpec::new(echo, "x")
    };
    for (bad, field) in [
        (absurd, "`limits`"),
        (zero_attempts, "`max_attempts`"),
        (unknown_mount, "`mounts`"),
    ] {
        let err = h
            .scheduler
            .submit(&access, batch, vec![TaskSpec::new(echo, "ok"), bad])
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Invalid(_)), "{err}");
        assert!(
            err.to_string().contains("task 1: field") && err.to_string().contains(field),
            "{err}"
        );
    }
    assert_eq!(
        h.scheduler.batch_get(batch).await.unwrap().progress.total(),
        0
    );
    let not_a_component = h
        .scheduler
        .module_add(b"hello".to_vec(), None, None)
        .await
        .unwrap_err();
    assert!(
        not_a_component
            .to_string()
            .contains("not a WebAssembly file"),
        "{not_a_component}"
    );
    h.stop().await;
}

async fn cancelling_a_running_task_stops_it_promptly(backend: Backend) {
    let h = Harness::start_on(backend, 2, 0).await;
    let bad = h.module("misbehave").await;
    let (batch, access) = h.open(BatchSpec::default()).await;
    let ids = h
        .scheduler
        .submit(
            &access,
            batch,
            vec![
                TaskSpec::new(bad, "spin"),
                TaskSpec {
                    order: 1,
                    ..TaskSpec::new(bad, "ok")
                },
            ],
        )
        .await
        .unwrap();
    // The live view shows where it runs once it has a slot.
    let running = h.wait_until_running().await;
    assert_eq!(running.len(), 1);
    assert_eq!(
        (running[0].task, running[0].batch, running[0].node.as_str()),
        (ids[0], batch, "test-node")
    );
    assert!(running[0].slot.unwrap() < 2);
    assert_eq!(
        h.scheduler.task_cancel(&access, ids[0]).await.unwrap(),
        CancelResult::Requested
    );
    let info = h.wait(batch).await;
    assert_eq!((info.progress.cancelled, info.progress.succeeded), (1, 1));
    let spin = h.scheduler.task_get(ids[0]).await.unwrap();
    assert_eq!(
        spin.outcome,
        Some(Outcome::Cancelled),
        "the 30 s timeout did not fire first"
    );
    h.stop().await;
}

/// Many batches, orders, groups with limits 1 to 3, priorities, batch limits, retries,
/// failures and cancellations, on four slots; every rule is checked over the log.
/// (Fairness between batches is checked where priorities are equal and the timing is in the
/// test's hands: the conformance case `a_later_small_batch_is_not_starved`.)
async fn random_workloads_keep_every_rule(backend: Backend) {
    const SLOTS: usize = 4;
    for round in 1..=8u64 {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ round);
        let h = Harness::start_on(backend, SLOTS, 2).await;
        let bad = h.module("misbehave").await;
        let mut group_limits = HashMap::new();
        for g in 0..4 {
            let limit = 1 + rng.below(3) as u32;
            group_limits.insert(format!("g{g}"), limit as usize);
            h.scheduler
                .group_set_limit(format!("g{g}"), limit)
                .await
                .unwrap();
        }
        let mut batches = Vec::new();
        let mut submitted = HashSet::new();
        for _ in 0..(3 + rng.below(4)) {
            let spec = BatchSpec {
                max_parallel: (rng.below(3) == 0).then(|| 1 + rng.below(2) as u32),
                failure_policy: if rng.below(5) == 0 {
                    FailurePolicy::Halt
                } else {
                    FailurePolicy::Continue
                },
                ..BatchSpec::default()
            };
            let max_parallel = spec.max_parallel;
            let (batch, access) = h.open(spec).await;
            let tasks: Vec<TaskSpec> = (0..(5 + rng.below(20)))
                .map(|_| {
                    let input = match rng.below(10) {
                        0 => "error".to_string(),
                        1 => "trap".to_string(),
                        _ => format!("sleep:{}", 1 + rng.below(12)),
                    };
                    TaskSpec {
                        order: rng.below(4) as i64,
                        group: (rng.below(2) == 0).then(|| format!("g{}", rng.below(4))),
                        priority: Some(rng.below(3) as i32),
                        max_attempts: 1 + rng.below(2) as u32,
                        backoff: Duration::from_millis(rng.below(5)),
                        ..TaskSpec::new(bad, input)
                    }
                })
                .collect();
            let ids = h.scheduler.submit(&access, batch, tasks).await.unwrap();
            submitted.extend(ids.iter().copied());
            if rng.below(3) == 0 {
                let victim = ids[rng.below(ids.len() as u64) as usize];
                h.scheduler.task_cancel(&access, victim).await.unwrap();
            }
            batches.push((batch, max_parallel));
        }
        for &(batch, _) in &batches {
            h.wait(batch).await;
        }

        let log = h.log().await;
        let spans: Vec<Span> = log.iter().map(Span::from).collect();
        let context = |e: String| format!("round {round}: {e}");
        rules::check_parallelism(&spans, SLOTS)
            .map_err(context)
            .unwrap();
        rules::check_gates(&spans).map_err(context).unwrap();
        rules::check_group_limits(&spans, |g| group_limits[g])
            .map_err(context)
            .unwrap();
        let limits: HashMap<_, _> = batches
            .iter()
            .map(|&(b, m)| (b, m.map(|m| m as usize)))
            .collect();
        rules::check_batch_limits(&spans, |b| limits[&b])
            .map_err(context)
            .unwrap();

        // Every task ended exactly once; a success has exactly one succeeded attempt.
        for &id in &submitted {
            let task = h.scheduler.task_get(id).await.unwrap();
            assert!(
                task.state.is_ended(),
                "round {round}: task {id} is {:?}",
                task.state
            );
            let attempts: Vec<_> = log.iter().filter(|a| a.task == id).collect();
            let succeeded = attempts
                .iter()
                .filter(|a| a.outcome == Outcome::Succeeded)
                .count();
            assert_eq!(
                succeeded,
                usize::from(task.state == TaskState::Succeeded),
                "round {round}: task {id}"
            );
            assert!(attempts.len() as u32 <= task.max_attempts);
            assert!(
                attempts.iter().all(|a| a.outcome != Outcome::Lost),
                "round {round}: an attempt was lost"
            );
        }
        h.stop().await;
    }
}

/// Stopping a node lets running tasks finish within the grace period and hands back the
/// rest untouched; the next node runs them.
async fn a_stopping_node_hands_back_what_it_cannot_finish(backend: Backend) {
    let mut h = Harness::start_on(backend, 1, 2).await;
    let sleep = h.module("sleep").await;
    let (batch, access) = h.open(BatchSpec::default()).await;
    let ids = h
        .scheduler
        .submit(
            &access,
            batch,
            vec![sleep_task(sleep, 100, 0), sleep_task(sleep, 10_000, 1)],
        )
        .await
        .unwrap();
    // The short task finishes within the grace period.
    h.wait_until_running().await;
    h.node
        .take()
        .unwrap()
        .stop(Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(
        h.scheduler.task_get(ids[0]).await.unwrap().state,
        TaskState::Succeeded
    );
    assert_eq!(
        h.scheduler.task_get(ids[1]).await.unwrap().state,
        TaskState::Ready,
        "never started"
    );

    // The long one is handed back when the grace period runs out.
    let node = qhost::scheduler::node::Node::start(h.scheduler.clone())
        .await
        .unwrap();
    h.wait_until_running().await;
    node.stop(Duration::from_millis(50)).await.unwrap();
    let long = h.scheduler.task_get(ids[1]).await.unwrap();
    assert_eq!((long.state, long.attempts), (TaskState::Ready, 0));
    assert_eq!(
        h.log().await.len(),
        1,
        "a handed-back run leaves no attempt"
    );
}

/// Cancelling the task that held a batch's gate opens the next order at once, even while
/// nothing else ends on the node.
async fn cancelling_a_gate_opens_the_next_order(backend: Backend) {
    let h = Harness::start_on(backend, 2, 0).await;
    let sleep = h.module("sleep").await;
    let (long_batch, long_access) = h.open(BatchSpec::default()).await;
    let long = TaskSpec {
        group: Some("g".into()),
        ..sleep_task(sleep, 20_000, 0)
    };
    let long_id = h
        .scheduler
        .submit(&long_access, long_batch, vec![long])
        .await
        .unwrap()[0];
    h.wait_until_running().await;

    let (batch, access) = h.open(BatchSpec::default()).await;
    let held = TaskSpec {
        group: Some("g".into()),
        ..sleep_task(sleep, 1, 0)
    };
    let ids = h
        .scheduler
        .submit(&access, batch, vec![held, sleep_task(sleep, 1, 1)])
        .await
        .unwrap();
    h.scheduler.task_cancel(&access, ids[0]).await.unwrap();
    let info = h.wait(batch).await;
    assert_eq!((info.progress.cancelled, info.progress.succeeded), (1, 1));
    assert_eq!(
        h.scheduler.task_get(long_id).await.unwrap().state,
        TaskState::Running
    );
    h.scheduler
        .task_cancel(&long_access, long_id)
        .await
        .unwrap();
    h.stop().await;
}

/// A task that floods its log with empty lines ends, its log cut at its limit and saying
/// so; the task submitted after it runs at once.
async fn a_log_flood_ends_its_task_and_holds_up_nothing(backend: Backend) {
    let h = Harness::start_on(backend, 1, 0).await;
    let bad = h.module("misbehave").await;
    let (batch, access) = h.open(BatchSpec::default()).await;
    let flood = TaskSpec {
        max_attempts: 1,
        ..TaskSpec::new(bad, "flood:1000000")
    };
    h.scheduler
        .submit(&access, batch, vec![flood])
        .await
        .unwrap();
    assert_eq!(h.wait(batch).await.progress.succeeded, 1);
    let log = h.log().await;
    let (mark, kept) = log[0].logs.split_last().expect("log lines");
    let charged: u64 = kept
        .iter()
        .map(|l| LOG_LINE_COST + l.message.len() as u64)
        .sum();
    assert!(
        charged <= TaskLimits::default().log,
        "{} lines kept, {charged} bytes against a limit of {}",
        kept.len(),
        TaskLimits::default().log
    );
    assert!(
        mark.message.contains("more log line(s) dropped"),
        "the cut log does not say so: {mark:?}"
    );

    let (next, access) = h.open(BatchSpec::default()).await;
    h.scheduler
        .submit(&access, next, vec![TaskSpec::new(bad, "ok")])
        .await
        .unwrap();
    let info = h
        .scheduler
        .batch_wait(next, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(info.progress.succeeded, 1, "{:?}", info.progress);
    h.stop().await;
}

/// The harness on a store that fails on demand.
async fn faulty_harness(backend: Backend, workers: usize) -> (Harness, Arc<FaultyStore>) {
    let mut faulty = None;
    let h = Harness::start_wrapped(backend, workers, 0, |store| {
        let store = FaultyStore::new(store);
        faulty = Some(store.clone());
        store
    })
    .await;
    (h, faulty.unwrap())
}

/// Upkeep that rescues leases often prunes ended work only every tenth of the retention:
/// finding what to prune reads the ended tasks, the whole table when none is old enough.
async fn pruning_keeps_its_own_pace_beside_frequent_rescues(backend: Backend) {
    let mut faulty = None;
    let h = Harness::start_configured(
        backend,
        1,
        0,
        |store| {
            let store = FaultyStore::new(store);
            faulty = Some(store.clone());
            store
        },
        |config| {
            config.rescue_every = Some(Duration::from_millis(10));
            config.retention = Some(Duration::from_secs(3600));
        },
    )
    .await;
    let faulty = faulty.unwrap();
    faulty.rescued(20).await;
    assert_eq!(
        faulty.prunes(),
        1,
        "20 rescues 10 ms apart, within a tenth of an hour's retention: one prune, the first"
    );
    h.stop().await;
}

/// An attempt whose record the store refuses (too large for it) is recorded failed, with
/// a short error saying why; the attempts written with it, and every later one, go through.
async fn a_record_the_store_refuses_holds_up_nothing(backend: Backend) {
    let (h, faulty) = faulty_harness(backend, 2).await;
    faulty.refuse_logs_over(1000);
    let bad = h.module("misbehave").await;
    let (batch, access) = h.open(BatchSpec::default()).await;
    let once = |input: &str| TaskSpec {
        max_attempts: 1,
        ..TaskSpec::new(bad, input)
    };
    let mut tasks = vec![once("log:200")];
    tasks.extend((0..5).map(|_| once("ok")));
    let ids = h.scheduler.submit(&access, batch, tasks).await.unwrap();
    let info = h
        .scheduler
        .batch_wait(batch, Duration::from_secs(20))
        .await
        .unwrap();
    assert!(info.progress.is_done(), "stalled: {:?}", info.progress);
    assert_eq!(
        (info.progress.succeeded, info.progress.failed),
        (5, 1),
        "{:?}",
        info.progress
    );
    let refused = h.scheduler.task_get(ids[0]).await.unwrap();
    assert_eq!(refused.outcome, Some(Outcome::Trap));
    let error = refused.error.unwrap_or_default();
    assert!(
        error.starts_with("the attempt's record could not be stored: ")
            && error.contains("string or blob too big"),
        "{error}"
    );

    let (next, access) = h.open(BatchSpec::default()).await;
    h.scheduler
        .submit(&access, next, vec![once("ok")])
        .await
        .unwrap();
    let info = h
        .scheduler
        .batch_wait(next, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(info.progress.succeeded, 1, "{:?}", info.progress);
    h.stop().await;
}

/// A task the host could not start ends its attempt `host-error`, which is not charged to
/// it: a task of one attempt runs again, after a backoff, and succeeds once the host can
/// start it.
async fn a_host_error_is_not_charged_to_the_task(backend: Backend) {
    let (h, faulty) = faulty_harness(backend, 1).await;
    // Stored past the scheduler, which has not loaded it: a run must read it.
    let bytes = std::fs::read(qhost_tests::guest("echo")).unwrap();
    let echo = h
        .store
        .module_put(bytes, Some("echo".into()), None, now_micros())
        .await
        .unwrap()
        .digest;
    faulty.set_modules_down(true);
    let (batch, access) = h.open(BatchSpec::default()).await;
    let task = TaskSpec {
        max_attempts: 1,
        backoff: Duration::ZERO,
        ..TaskSpec::new(echo, "hi")
    };
    let id = h
        .scheduler
        .submit(&access, batch, vec![task])
        .await
        .unwrap()[0];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while h.log().await.is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "no attempt ended");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let after_one = h.scheduler.task_get(id).await.unwrap();
    assert_eq!(after_one.outcome, Some(Outcome::HostError));
    assert!(
        matches!(after_one.state, TaskState::Ready | TaskState::Waiting)
            && after_one.max_attempts == 2,
        "the attempt is given back and the task waits out its backoff: {after_one:?}"
    );
    faulty.set_modules_down(false);
    let info = h.wait(batch).await;
    assert_eq!(info.progress.succeeded, 1, "{:?}", info.progress);
    let outcomes: Vec<_> = h.log().await.iter().map(|a| a.outcome).collect();
    assert_eq!(outcomes, [Outcome::HostError, Outcome::Succeeded]);
    let error = h.log().await[0].error.clone().unwrap_or_default();
    assert!(error.starts_with("host error: "), "{error}");
    h.stop().await;
}

/// While the store takes no records, a node keeps its completions and writes them once the
/// store is back. A node told to stop while the store takes nothing stops after its grace
/// period, and the next node runs its tasks again.
async fn a_store_that_takes_nothing_loses_nothing_and_holds_up_no_stop(backend: Backend) {
    let (mut h, faulty) = faulty_harness(backend, 1).await;
    let bad = h.module("misbehave").await;
    faulty.set_down(true);
    let (batch, access) = h.open(BatchSpec::default()).await;
    h.scheduler
        .submit(&access, batch, vec![TaskSpec::new(bad, "ok")])
        .await
        .unwrap();
    faulty.failed(2).await;
    faulty.set_down(false);
    assert_eq!(
        h.wait(batch).await.progress.succeeded,
        1,
        "kept and written"
    );

    faulty.set_down(true);
    let (batch, access) = h.open(BatchSpec::default()).await;
    let id = h
        .scheduler
        .submit(&access, batch, vec![TaskSpec::new(bad, "ok")])
        .await
        .unwrap()[0];
    faulty.failed(faulty.failures() + 1).await;
    let stop = h.node.take().unwrap().stop(Duration::from_millis(100));
    tokio::time::timeout(Duration::from_secs(30), stop)
        .await
        .expect("the node did not stop while the store took nothing")
        .unwrap();
    let task = h.scheduler.task_get(id).await.unwrap();
    assert!(!task.state.is_ended(), "{:?}", task.state);

    faulty.set_down(false);
    h.node = Some(
        qhost::scheduler::node::Node::start(h.scheduler.clone())
            .await
            .unwrap(),
    );
    assert_eq!(h.wait(batch).await.progress.succeeded, 1, "run again");
    h.stop().await;
}

/// A chain of tasks, each gated behind the one before, on one slot: on a store that claims
/// in reports, the claim loop leaves its room with the writer, and each next task is
/// claimed in the transaction that records its predecessor's end. Some are claimed alone
/// (the first, and any whose predecessor ended before the claim loop left its claim), and
/// the gates hold all the same. Each task runs 25 ms: the claim loop leaves its claim
/// after one more claim of its own, and tasks of no length ended before it did on a
/// loaded machine (23 of 60 claimed in reports, seen once).
async fn a_chain_is_claimed_in_the_reports_of_its_ends(backend: Backend) {
    let (h, faulty) = faulty_harness(backend, 1).await;
    assert!(faulty.claims_in_reports(), "SQLite claims in reports");
    let sleep = h.module("sleep").await;
    let (batch, access) = h.open(BatchSpec::default()).await;
    let chain = 60;
    let tasks = (0..chain)
        .map(|order| sleep_task(sleep, 25, order))
        .collect();
    h.scheduler.submit(&access, batch, tasks).await.unwrap();
    assert_eq!(h.wait(batch).await.progress.succeeded, chain as u64);
    rules::check_gates(&h.spans().await).unwrap();
    let (alone, in_reports) = faulty.claimed();
    assert_eq!(alone + in_reports, chain as usize, "each task claimed once");
    assert!(
        in_reports >= chain as usize / 2,
        "{in_reports} of {chain} tasks claimed in the reports of their predecessors' ends"
    );
    h.stop().await;
}

/// Each scenario as a test on each driver.
macro_rules! on_each_backend {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Backend::Sqlite).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Backend::Postgres).await
                }
            )*
        }
    };
}

on_each_backend!(
    ordered_batch_runs_order_by_order,
    raised_tasks_run_next_highest_first,
    group_held_tasks_never_hold_up_others,
    handles_guard_their_batches,
    bad_submissions_are_refused_whole,
    cancelling_a_running_task_stops_it_promptly,
    random_workloads_keep_every_rule,
    a_stopping_node_hands_back_what_it_cannot_finish,
    cancelling_a_gate_opens_the_next_order,
    a_log_flood_ends_its_task_and_holds_up_nothing,
    a_record_the_store_refuses_holds_up_nothing,
    a_store_that_takes_nothing_loses_nothing_and_holds_up_no_stop,
    a_host_error_is_not_charged_to_the_task,
    pruning_keeps_its_own_pace_beside_frequent_rescues,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_is_claimed_in_the_reports_of_its_ends_on_sqlite() {
    a_chain_is_claimed_in_the_reports_of_its_ends(Backend::Sqlite).await
}
