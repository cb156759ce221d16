//! The runtime, driven with real components: every outcome produced by a misbehaving
//! guest (and the host healthy afterwards), the slot bound on parallelism, the sandbox and
//! its mounts, bounded captures, refused components, the artifact cache, and that no
//! task sees what an earlier one left in a reused instance slot.

use std::sync::Arc;
use std::time::Duration;

use qhost::runtime::limits::{KIB, MIB};
use qhost::runtime::{
    LoadError, Mount, MountGrant, Outcome, RunBudget, RunInfo, RunReport, RunRequest, Runtime,
    RuntimeConfig, TaskLimits, TaskModule,
};
use qhost::scheduler::rules::{Span, peak_overlap};
use qhost::store::{duration_micros, to_micros};
use qhost_tests::{guest, padded_to_map_images};

fn runtime(workers: usize) -> Runtime {
    Runtime::new(RuntimeConfig::with_workers(workers)).expect("runtime")
}

fn request(input: &str) -> RunRequest {
    RunRequest {
        input: input.as_bytes().to_vec(),
        ..RunRequest::default()
    }
}

async fn run(runtime: &Runtime, module: &TaskModule, request: RunRequest) -> RunReport {
    runtime.run(module, request).await.expect("run")
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("utf-8")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_returns_its_input() {
    let rt = runtime(1);
    let echo = rt.load_file(&guest("echo")).unwrap();
    let report = run(&rt, &echo, request("hello, qhost")).await;
    assert_eq!(report.outcome, Outcome::Succeeded);
    assert_eq!(report.output.as_deref(), Some(&b"hello, qhost"[..]));
    assert_eq!(report.error, None);
}

/// Each misbehaviour ends with its own outcome, and the same single slot then runs a
/// normal task fine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_breach_has_its_outcome_and_the_host_stays_healthy() {
    let rt = runtime(1);
    let bad = rt.load_file(&guest("misbehave")).unwrap();
    let limits = TaskLimits {
        timeout: Duration::from_millis(300),
        memory: 32 * MIB,
        output: 64 * KIB,
        ..TaskLimits::default()
    };
    let cases: [(&str, Outcome, &str); 7] = [
        ("spin", Outcome::Timeout, "timeout of 300ms"),
        ("alloc", Outcome::MemoryLimit, "memory limit of 32.0 MiB"),
        ("trap", Outcome::Trap, "unreachable"),
        ("panic", Outcome::Trap, "asked to panic"),
        ("recurse", Outcome::Trap, "call stack exhausted"),
        ("error", Outcome::GuestError, "asked to fail"),
        (
            "output:100000",
            Outcome::OutputTooLarge,
            "over the limit of 64.0 KiB",
        ),
    ];
    for (input, outcome, message) in cases {
        let report = run(
            &rt,
            &bad,
            RunRequest {
                limits,
                ..request(input)
            },
        )
        .await;
        assert_eq!(report.outcome, outcome, "{input}: {:?}", report.error);
        let error = report.error.unwrap_or_default();
        assert!(
            error.contains(message),
            "{input}: error `{error}` lacks `{message}`"
        );
        assert_eq!(report.output, None, "{input}");

        let healthy = run(&rt, &bad, request("ok")).await;
        assert_eq!(healthy.outcome, Outcome::Succeeded, "after {input}");
        assert_eq!(healthy.slot, 0);
    }
}

/// A run's CPU time is what its code burned, not what it waited: a guest that spins until
/// its timeout burns CPU all along, one that sleeps as long almost none; neither more than
/// its run lasted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_cpu_time_is_what_it_burned_not_what_it_waited() {
    let rt = runtime(1);
    let spinner = rt.load_file(&guest("misbehave")).unwrap();
    let sleeper = rt.load_file(&guest("sleep")).unwrap();
    let limits = TaskLimits {
        timeout: Duration::from_millis(300),
        ..TaskLimits::default()
    };
    let spin = run(
        &rt,
        &spinner,
        RunRequest {
            limits,
            ..request("spin")
        },
    )
    .await;
    let sleep = run(&rt, &sleeper, request("300")).await;
    assert_eq!(
        (spin.outcome, sleep.outcome),
        (Outcome::Timeout, Outcome::Succeeded)
    );
    for report in [&spin, &sleep] {
        assert!(
            report.cpu <= report.duration,
            "{:?}",
            (report.cpu, report.duration)
        );
    }
    assert!(
        sleep.cpu < sleep.duration / 10,
        "a sleeper burned {:?} in {:?}",
        sleep.cpu,
        sleep.duration
    );
    assert!(
        spin.cpu >= Duration::from_millis(20) && spin.cpu > sleep.cpu * 2,
        "a spinner burned {:?} in {:?}, a sleeper {:?}",
        spin.cpu,
        spin.duration,
        sleep.cpu
    );
}

/// A run given the CPU its tenant's budget has left ends `budget` once it used it, a
/// spinner as a sleeper: the sleeper, given as little, waits its 300 ms out and succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_ends_at_the_cpu_it_was_given() {
    let rt = runtime(1);
    let spinner = rt.load_file(&guest("misbehave")).unwrap();
    let sleeper = rt.load_file(&guest("sleep")).unwrap();
    let given = Duration::from_millis(100);
    let spin = run(
        &rt,
        &spinner,
        RunRequest {
            budget: RunBudget {
                cpu: Some(given),
                ..RunBudget::default()
            },
            ..request("spin")
        },
    )
    .await;
    assert_eq!(spin.outcome, Outcome::Budget, "{:?}", spin.error);
    assert!(
        spin.cpu >= given && spin.cpu < given * 2,
        "given {given:?}, the spinner used {:?}",
        spin.cpu
    );
    assert!(
        spin.error.as_deref().unwrap_or_default().contains("100ms"),
        "{:?}",
        spin.error
    );
    let sleep = run(
        &rt,
        &sleeper,
        RunRequest {
            budget: RunBudget {
                cpu: Some(given),
                ..RunBudget::default()
            },
            ..request("300")
        },
    )
    .await;
    assert_eq!(sleep.outcome, Outcome::Succeeded, "{:?}", sleep.error);
}

/// A run's memory is its size over time: a guest that grows to 64 MiB and holds it for
/// 300 ms holds at least 19.2 MiB-seconds, and at most its limit over its whole run; one
/// that sleeps as long with little memory holds less than a tenth of that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_memory_is_its_size_over_time() {
    let rt = runtime(1);
    let guest = rt.load_file(&guest("misbehave")).unwrap();
    let limits = TaskLimits {
        memory: 128 * MIB,
        ..TaskLimits::default()
    };
    let held = run(
        &rt,
        &guest,
        RunRequest {
            limits,
            ..request("hold:1024")
        },
    )
    .await;
    assert_eq!(held.outcome, Outcome::Succeeded, "{:?}", held.error);
    let most = 128.0 * held.duration.as_secs_f64();
    assert!(
        held.memory_mib_seconds >= 64.0 * 0.3 && held.memory_mib_seconds <= most,
        "{} MiB-s in {:?}",
        held.memory_mib_seconds,
        held.duration
    );
    let slept = run(&rt, &guest, request("sleep:300")).await;
    assert!(
        slept.memory_mib_seconds > 0.0 && slept.memory_mib_seconds < held.memory_mib_seconds / 10.0,
        "{} MiB-s asleep, {} held",
        slept.memory_mib_seconds,
        held.memory_mib_seconds
    );
}

/// A run given the memory-time its tenant's budget has left ends `budget` once its size
/// over time reaches it, while it sleeps: 64 MiB held against 4 MiB-seconds ends within a
/// tenth of a second, not after the guest's 300 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_ends_at_the_memory_time_it_was_given() {
    let rt = runtime(1);
    let guest = rt.load_file(&guest("misbehave")).unwrap();
    let held = run(
        &rt,
        &guest,
        RunRequest {
            limits: TaskLimits {
                memory: 128 * MIB,
                ..TaskLimits::default()
            },
            budget: RunBudget {
                memory_mib_seconds: Some(4.0),
                ..RunBudget::default()
            },
            ..request("hold:1024")
        },
    )
    .await;
    assert_eq!(held.outcome, Outcome::Budget, "{:?}", held.error);
    let error = held.error.unwrap_or_default();
    assert!(error.contains("4.000 MiB-seconds of memory"), "{error}");
    assert!(
        held.memory_mib_seconds >= 4.0 && held.memory_mib_seconds < 4.0 + 64.0 * 0.05,
        "{} MiB-s held against 4",
        held.memory_mib_seconds
    );
    assert!(
        held.duration < Duration::from_millis(300),
        "{:?}",
        held.duration
    );
}

/// With N slots and many more tasks at once, never more than N execute at the same time,
/// the slots are all used, and two overlapping runs never share a slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slots_bound_parallelism() {
    const SLOTS: usize = 3;
    for round in 0..5 {
        let rt = Arc::new(runtime(SLOTS));
        let sleep = rt.load_file(&guest("sleep")).unwrap();
        let mut runs = Vec::new();
        for _ in 0..24 {
            let (rt, sleep) = (rt.clone(), sleep.clone());
            runs.push(tokio::spawn(async move {
                run(&rt, &sleep, request("20")).await
            }));
        }
        let mut spans = Vec::new();
        for handle in runs {
            let report = handle.await.unwrap();
            assert_eq!(report.outcome, Outcome::Succeeded, "{:?}", report.error);
            assert!(report.slot < SLOTS);
            let start = to_micros(report.started_at);
            // The slot stands in the span's `batch`, to check each slot on its own.
            spans.push(Span {
                task: spans.len() as i64,
                batch: report.slot as i64,
                order: 0,
                group: None,
                start,
                end: start + duration_micros(report.duration),
            });
        }
        let peak = peak_overlap(&spans);
        assert!(
            peak <= SLOTS,
            "round {round}: {peak} tasks ran at once on {SLOTS} slots"
        );
        assert_eq!(peak, SLOTS, "round {round}: the slots were not all used");
        for slot in 0..SLOTS as i64 {
            let on_slot = spans.iter().filter(|s| s.batch == slot);
            assert!(
                peak_overlap(on_slot) <= 1,
                "slot {slot} ran two tasks at once"
            );
        }
        assert_eq!(rt.busy_slots(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn captured_output_and_logs_stay_bounded() {
    let rt = runtime(1);
    let bad = rt.load_file(&guest("misbehave")).unwrap();
    let limits = TaskLimits {
        stdout: 64 * KIB,
        stderr: KIB,
        log: 10 * KIB,
        ..TaskLimits::default()
    };
    let report = run(
        &rt,
        &bad,
        RunRequest {
            limits,
            ..request("stdout:5000000")
        },
    )
    .await;
    assert_eq!(report.outcome, Outcome::Succeeded, "{:?}", report.error);
    assert_eq!(report.stdout.bytes.len() as u64, 64 * KIB);
    assert_eq!(report.stdout.dropped, 5_000_000 - 64 * KIB);

    let report = run(
        &rt,
        &bad,
        RunRequest {
            limits,
            ..request("stderr:3000")
        },
    )
    .await;
    assert_eq!(report.stderr.bytes.len() as u64, KIB);

    let report = run(
        &rt,
        &bad,
        RunRequest {
            limits,
            ..request("log:100000")
        },
    )
    .await;
    assert_eq!(report.outcome, Outcome::Succeeded);
    let kept: usize = report.logs.iter().map(|l| l.message.len()).sum();
    assert!(kept as u64 <= 10 * KIB, "kept {kept} bytes of log");
    assert_eq!(report.logs.len() as u64 + report.logs_dropped, 100_000);
    assert_eq!(report.logs[0].message, "line 0");
}

/// A line costs its share of the log limit even when empty: a guest logging empty lines
/// in a loop keeps a bounded number of them, and the rest are counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_log_lines_count_against_the_log_limit() {
    let rt = runtime(1);
    let bad = rt.load_file(&guest("misbehave")).unwrap();
    let limits = TaskLimits {
        log: 64 * KIB,
        ..TaskLimits::default()
    };
    let report = run(
        &rt,
        &bad,
        RunRequest {
            limits,
            ..request("flood:1000000")
        },
    )
    .await;
    assert_eq!(report.outcome, Outcome::Succeeded, "{:?}", report.error);
    assert!(
        report.logs.len() <= 1024,
        "{} empty lines kept under a 64 KiB log limit",
        report.logs.len()
    );
    assert!(!report.logs.is_empty());
    assert_eq!(report.logs.len() as u64 + report.logs_dropped, 1_000_000);
}

/// A guest's error message is cut at 64 KiB, saying how much was cut: each attempt of a
/// task keeps its own, so an unbounded one would be kept once per attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_error_messages_are_cut_and_say_so() {
    let rt = runtime(1);
    let bad = rt.load_file(&guest("misbehave")).unwrap();
    let report = run(&rt, &bad, request("error:1000000")).await;
    assert_eq!(report.outcome, Outcome::GuestError);
    let error = report.error.unwrap();
    assert!(
        error.len() as u64 <= 64 * KIB,
        "an error of {} bytes was kept",
        error.len()
    );
    let kept = error.bytes().take_while(|&b| b == b'e').count();
    assert!(kept as u64 > 60 * KIB, "only {kept} bytes kept");
    let marker = format!("… [cut: {} bytes more]", 1_000_000 - kept);
    assert!(
        error.ends_with(&marker),
        "`{}` does not end with `{marker}`",
        &error[kept.saturating_sub(10)..]
    );
    let small = run(&rt, &bad, request("error:100")).await;
    assert_eq!(small.error.as_deref(), Some(&*"e".repeat(100)), "untouched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_task_sees_its_info() {
    let rt = runtime(1);
    let bad = rt.load_file(&guest("misbehave")).unwrap();
    let info = RunInfo {
        id: 42,
        batch: 7,
        attempt: 3,
        order: -5,
        group: Some("billing".into()),
    };
    let report = run(
        &rt,
        &bad,
        RunRequest {
            info,
            ..request("info")
        },
    )
    .await;
    assert_eq!(
        text(&report.output.unwrap()),
        "id=42 batch=7 attempt=3 order=-5 group=billing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_grants_nothing_by_default() {
    let rt = runtime(1);
    let bad = rt.load_file(&guest("misbehave")).unwrap();
    let report = run(&rt, &bad, request("sandbox")).await;
    assert_eq!(report.outcome, Outcome::Succeeded, "{:?}", report.error);
    assert_eq!(
        text(&report.output.unwrap()),
        "args=0 env=0 stdin=0 root_entries=0 network=false"
    );
    let report = run(&rt, &bad, request("read:/etc/passwd")).await;
    assert_eq!(report.outcome, Outcome::GuestError);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mounts_are_granted_by_name_and_never_escaped() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("hello.txt"), "hello from the host").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), data.path().join("link"))
        .unwrap();

    let mut config = RuntimeConfig::with_workers(1);
    config.mounts = vec![
        Mount {
            name: "data".into(),
            dir: data.path().into(),
            writable: false,
        },
        Mount {
            name: "out".into(),
            dir: outside.path().into(),
            writable: true,
        },
    ];
    let rt = Runtime::new(config).unwrap();
    let bad = rt.load_file(&guest("misbehave")).unwrap();
    let read_only = vec![MountGrant {
        name: "data".into(),
        writable: false,
    }];
    let with = |input: &str, mounts: &Vec<MountGrant>| RunRequest {
        mounts: mounts.clone(),
        ..request(input)
    };

    let report = run(&rt, &bad, with("read:/data/hello.txt", &read_only)).await;
    assert_eq!(text(&report.output.unwrap()), "hello from the host");
    for escape in [
        "read:/data/../secret.txt",
        "read:/data/link",
        "read:/out/secret.txt",
    ] {
        let report = run(&rt, &bad, with(escape, &read_only)).await;
        assert_eq!(report.outcome, Outcome::GuestError, "{escape} was readable");
    }
    let report = run(&rt, &bad, with("write:/data/new.txt", &read_only)).await;
    assert_eq!(report.outcome, Outcome::GuestError);
    assert!(!data.path().join("new.txt").exists());

    let writable = vec![MountGrant {
        name: "out".into(),
        writable: true,
    }];
    let report = run(&rt, &bad, with("write:/out/new.txt", &writable)).await;
    assert_eq!(report.outcome, Outcome::Succeeded, "{:?}", report.error);
    assert_eq!(
        std::fs::read_to_string(outside.path().join("new.txt")).unwrap(),
        "written"
    );

    let write_to_read_only = vec![MountGrant {
        name: "data".into(),
        writable: true,
    }];
    let err = rt
        .run(&bad, with("ok", &write_to_read_only))
        .await
        .unwrap_err();
    assert!(
        format!("{err:#}").contains("mount `data` is read-only"),
        "{err:#}"
    );
    let unknown = vec![MountGrant {
        name: "etc".into(),
        writable: false,
    }];
    let err = rt.run(&bad, with("ok", &unknown)).await.unwrap_err();
    assert!(
        format!("{err:#}").contains("no mount is named `etc`"),
        "{err:#}"
    );
}

/// The operator's own programs read a writable mount too: a link a task leaves there
/// must not lead them out of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_cannot_make_a_link_out_of_its_mount() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let mut config = RuntimeConfig::with_workers(1);
    config.mounts = vec![Mount {
        name: "out".into(),
        dir: out.clone(),
        writable: true,
    }];
    let rt = Runtime::new(config).unwrap();
    let bad = rt.load_file(&guest("misbehave")).unwrap();
    let link = |target: &str| RunRequest {
        mounts: vec![MountGrant {
            name: "out".into(),
            writable: true,
        }],
        ..request(&format!("symlink:{target}"))
    };
    for outside in ["/etc/passwd", "../outside", "a/../../outside", ".."] {
        let report = run(&rt, &bad, link(outside)).await;
        assert_eq!(report.outcome, Outcome::GuestError, "a link to {outside}");
        assert!(
            std::fs::symlink_metadata(out.join("link")).is_err(),
            "a link to {outside} was left in the mount"
        );
    }
    let report = run(&rt, &bad, link("inside.txt")).await;
    assert_eq!(report.outcome, Outcome::Succeeded, "{:?}", report.error);
    assert_eq!(
        std::fs::read_link(out.join("link")).unwrap(),
        std::path::Path::new("inside.txt")
    );
}

/// Rounds of a task that plants a secret then one that scans for it, on one worker: more
/// rounds than the engine has slots for one worker (the worker's, and those waiting for a
/// batched clean-up), so scans run in slots that plants used.
const LEAK_ROUNDS: usize = 150;
/// MiB of heap, and as many of memory grown past it, that each plant fills.
const LEAK_MIB: usize = 8;

/// A task writes a secret over its stack, data, heap and memory it grew; the next tasks on
/// the same slots, growing their memory as far, never find it: on both engines (data
/// copied in, and memory images mapped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_task_sees_what_an_earlier_one_left_in_memory() {
    let rt = runtime(1);
    let component = std::fs::read(guest("misbehave")).unwrap();
    for bytes in [component.clone(), padded_to_map_images(&component)] {
        let bad = rt.load(&bytes).unwrap();
        let limits = TaskLimits {
            memory: 4 * LEAK_MIB as u64 * MIB,
            ..TaskLimits::default()
        };
        let go = |input: String| RunRequest {
            input: input.into_bytes(),
            limits,
            ..RunRequest::default()
        };
        let fresh = run(&rt, &bad, go("scan:0".into())).await;
        assert_eq!(fresh.output.as_deref(), Some(&b"found=0"[..]), "{fresh:?}");
        for round in 0..LEAK_ROUNDS {
            let planted = run(&rt, &bad, go(format!("plant:{LEAK_MIB}"))).await;
            assert_eq!(planted.outcome, Outcome::Succeeded, "{planted:?}");
            let planted = text(planted.output.as_deref().unwrap());
            let (found, pages) = planted
                .strip_prefix("found=")
                .and_then(|rest| rest.split_once(" pages="))
                .unwrap_or_else(|| panic!("plant said {planted}"));
            // The plant's own scan finds what it wrote: the scan can see a secret.
            let found: usize = found.parse().unwrap();
            assert!(found >= 2 * (LEAK_MIB << 17), "plant found only {found}");
            let scanned = run(&rt, &bad, go(format!("scan:{pages}"))).await;
            assert_eq!(
                scanned.output.as_deref(),
                Some(&b"found=0"[..]),
                "round {round}: a task saw an earlier task's data: {scanned:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_stops_a_spinning_task() {
    let rt = Arc::new(runtime(1));
    let bad = rt.load_file(&guest("misbehave")).unwrap();
    let req = request("spin");
    let cancel = req.cancel.clone();
    let running = {
        let (rt, bad) = (rt.clone(), bad.clone());
        tokio::spawn(async move { run(&rt, &bad, req).await })
    };
    while rt.busy_slots() == 0 {
        tokio::task::yield_now().await;
    }
    cancel.cancel();
    // The default timeout is 30 s: `cancelled` proves the cancellation stopped it.
    let report = running.await.unwrap();
    assert_eq!(report.outcome, Outcome::Cancelled);
    assert_eq!(
        run(&rt, &bad, request("ok")).await.outcome,
        Outcome::Succeeded
    );
}

#[test]
fn components_qhost_cannot_run_are_refused_with_the_reason() {
    let rt = runtime(1);
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, Vec<u8>, &str); 4] = [
        ("text", b"hello".to_vec(), "not a WebAssembly file"),
        (
            "core module",
            b"\0asm\x01\0\0\0".to_vec(),
            "core WebAssembly module",
        ),
        (
            "truncated",
            b"\0asm\x0d\0\x01\0\x01".to_vec(),
            "not a valid component",
        ),
        (
            "wrong export",
            std::fs::read(guest("wrong-export")).unwrap(),
            "`run`",
        ),
    ];
    for (name, bytes, reason) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let err = rt.load_file(&path).err().expect(name);
        assert!(format!("{err:#}").contains(reason), "{name}: {err:#}");
    }
    let foreign = std::fs::read(guest("foreign-import")).unwrap();
    match rt.load(&foreign) {
        Err(LoadError::UnsupportedImport(detail)) => {
            assert!(detail.contains("test:foreign/vault"), "{detail}")
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("a component with a foreign import was accepted"),
    }
    let wrong = std::fs::read(guest("wrong-export")).unwrap();
    assert!(matches!(rt.load(&wrong), Err(LoadError::WrongExports(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compiled_components_are_cached_on_disk() {
    let cache = tempfile::tempdir().unwrap();
    let mut config = RuntimeConfig::with_workers(1);
    config.cache_dir = Some(cache.path().to_owned());
    let echo_bytes = std::fs::read(guest("echo")).unwrap();

    let first = Runtime::new(config.clone()).unwrap();
    let digest = first.load(&echo_bytes).unwrap().digest();
    let artifacts: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert_eq!(artifacts.len(), 1);
    let artifact = &artifacts[0];
    assert!(
        artifact
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with(&digest.to_hex())
    );
    drop(first);

    let second = Runtime::new(config.clone()).unwrap();
    let echo = second.load(&echo_bytes).unwrap();
    assert_eq!(
        run(&second, &echo, request("cached")).await.output.unwrap(),
        b"cached"
    );
    drop((echo, second));

    // A damaged artifact is not trusted: the component is compiled again.
    std::fs::remove_file(artifact).unwrap();
    std::fs::write(artifact, b"garbage").unwrap();
    let third = Runtime::new(config).unwrap();
    let echo = third.load(&echo_bytes).unwrap();
    assert_eq!(
        run(&third, &echo, request("recompiled"))
            .await
            .output
            .unwrap(),
        b"recompiled"
    );
    assert!(std::fs::metadata(artifact).unwrap().len() > 1000);
}

/// Two cached artifacts with their files swapped: each component still runs its own code,
/// compiled again, never the other's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapped_artifacts_are_not_run() {
    let cache = tempfile::tempdir().unwrap();
    let mut config = RuntimeConfig::with_workers(1);
    config.cache_dir = Some(cache.path().join("artifacts"));
    let echo_bytes = std::fs::read(guest("echo")).unwrap();
    let sleep_bytes = std::fs::read(guest("sleep")).unwrap();

    let first = Runtime::new(config.clone()).unwrap();
    let echo = first.load(&echo_bytes).unwrap().digest();
    let sleep = first.load(&sleep_bytes).unwrap().digest();
    drop(first);
    let artifact = |digest: qhost::runtime::Digest| {
        std::fs::read_dir(cache.path().join("artifacts"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .starts_with(&digest.to_hex())
            })
            .expect("an artifact")
    };
    let (echo_file, sleep_file) = (artifact(echo), artifact(sleep));
    let swap = cache.path().join("swap");
    std::fs::rename(&echo_file, &swap).unwrap();
    std::fs::rename(&sleep_file, &echo_file).unwrap();
    std::fs::rename(&swap, &sleep_file).unwrap();

    let second = Runtime::new(config).unwrap();
    let echo = second.load(&echo_bytes).unwrap();
    let report = run(&second, &echo, request("still echo")).await;
    assert_eq!(report.outcome, Outcome::Succeeded, "{:?}", report.error);
    assert_eq!(report.output.as_deref(), Some(&b"still echo"[..]));
    let sleep = second.load(&sleep_bytes).unwrap();
    let report = run(&second, &sleep, request("1")).await;
    assert_eq!(
        report.output.as_deref(),
        Some(&b"slept 1 ms"[..]),
        "{:?}",
        report.error
    );
}
