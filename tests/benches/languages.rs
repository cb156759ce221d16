//! Language benchmark: what a task costs in each guest language, with the same wordcount
//! task in Rust, Python, JavaScript (QuickJS and SpiderMonkey) and C.
//!
//! Prints, per language: the component's size, its compile time, the load time of its
//! cached artifact, the median latency of one task (instantiate + run + drop, 1 worker),
//! minor page faults per task, tasks per second with 2 workers, and resident memory: what
//! one more warm slot holds, and what the slots share (compiled code, touched pages of the
//! initial memory image).
//!
//!     cargo bench -p qhost-tests --bench languages
//!
//! Run it with RUST_BACKTRACE unset. The Python, JavaScript and C components are built by
//! guest-examples/build-languages.sh (toolchains: scripts/guest-toolchains.sh).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use qhost::runtime::{Outcome, RunRequest, Runtime, RuntimeConfig, TaskModule};
use qhost_tests::{LANGUAGE_GUESTS, guest, language_guest};

const INPUT: &[u8] = b"the quick brown fox\njumps over\tthe lazy dog\n";
/// How long each latency and throughput measure runs, at most.
const BUDGET: Duration = Duration::from_secs(3);
const MAX_RUNS: usize = 20_000;

struct Row {
    language: &'static str,
    size: u64,
    compile: Duration,
    cached_load: Duration,
    median: Duration,
    faults: f64,
    per_second: f64,
    shared: i64,
    per_slot: i64,
}

fn main() {
    let mut components: Vec<(&'static str, PathBuf)> = vec![("rust", guest("wordcount"))];
    components.extend(
        LANGUAGE_GUESTS
            .iter()
            .map(|&(language, stem)| (language, language_guest(stem))),
    );
    let expected = {
        let rt = Runtime::new(RuntimeConfig::with_workers(1)).unwrap();
        let module = rt.load_file(&guest("wordcount")).unwrap();
        tokio_runtime(1).block_on(run_once(&rt, &module))
    };

    let rows: Vec<Row> = components
        .into_iter()
        .map(|(language, path)| measure(language, &path, &expected))
        .collect();

    println!(
        "{:<26} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9}",
        "language",
        "size",
        "compile",
        "cached",
        "median",
        "faults",
        "tasks/s",
        "shared",
        "per slot"
    );
    println!(
        "{:<26} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9}",
        "", "", "", "load", "task", "/task", "2 slots", "RSS", "RSS"
    );
    for row in rows {
        println!(
            "{:<26} {:>9} {:>8} {:>8} {:>8} {:>8.0} {:>8.0} {:>9} {:>9}",
            row.language,
            format_bytes(row.size as i64),
            format_duration(row.compile),
            format_duration(row.cached_load),
            format_duration(row.median),
            row.faults,
            row.per_second,
            format_bytes(row.shared),
            format_bytes(row.per_slot),
        );
    }
}

fn measure(language: &'static str, path: &std::path::Path, expected: &[u8]) -> Row {
    let bytes = std::fs::read(path).expect("component");
    let cache = tempfile::tempdir().expect("temp dir");
    let mut config = RuntimeConfig::with_workers(1);
    config.cache_dir = Some(cache.path().to_owned());

    let rt = Runtime::new(config.clone()).unwrap();
    let started = Instant::now();
    rt.load(&bytes).expect("compile");
    let compile = started.elapsed();
    drop(rt);

    let rt = Runtime::new(config.clone()).unwrap();
    let started = Instant::now();
    let module = rt.load(&bytes).expect("load from the cache");
    let cached_load = started.elapsed();

    let tokio = tokio_runtime(1);
    assert_eq!(
        tokio.block_on(run_once(&rt, &module)),
        expected,
        "{language}"
    );
    let (mut latencies, faults) = tokio.block_on(async {
        for _ in 0..10 {
            run_once(&rt, &module).await;
        }
        let mut latencies = Vec::new();
        let faults_before = minor_faults();
        let started = Instant::now();
        while started.elapsed() < BUDGET && latencies.len() < MAX_RUNS {
            let run_started = Instant::now();
            run_once(&rt, &module).await;
            latencies.push(run_started.elapsed());
        }
        let faults = (minor_faults() - faults_before) as f64 / latencies.len() as f64;
        (latencies, faults)
    });
    latencies.sort();
    let median = latencies[latencies.len() / 2];
    drop(tokio);
    drop(rt);

    let (per_second, shared, per_slot) = throughput(&config, &bytes, median);
    Row {
        language,
        size: bytes.len() as u64,
        compile,
        cached_load,
        median,
        faults,
        per_second,
        shared: shared * 1024,
        per_slot: per_slot * 1024,
    }
}

async fn run_once(rt: &Runtime, module: &TaskModule) -> Vec<u8> {
    let report = rt
        .run(
            module,
            RunRequest {
                input: INPUT.to_vec(),
                ..RunRequest::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(report.outcome, Outcome::Succeeded, "{:?}", report.error);
    report.output.unwrap()
}

/// Tasks per second with 2 slots busy, over about [`BUDGET`]; and the process's resident
/// memory (KiB) that one warm slot holds and that all slots share (the compiled code and
/// the pages of the initial memory image that tasks touched). A slot is warm once it has
/// run the component: the first task makes one slot warm, the 2 loops the second.
fn throughput(config: &RuntimeConfig, bytes: &[u8], median: Duration) -> (f64, i64, i64) {
    let workers = 2;
    let mut config = config.clone();
    config.workers = workers;
    let rt = Arc::new(Runtime::new(config).unwrap());
    let module = rt.load(bytes).unwrap();
    let per_loop = ((BUDGET.as_secs_f64() / median.as_secs_f64()) as usize).clamp(20, MAX_RUNS);
    let tokio = tokio_runtime(workers);
    let loaded = rss_kib();
    tokio.block_on(run_once(&rt, &module));
    let one_warm = rss_kib();
    let per_second = tokio.block_on(async {
        let started = Instant::now();
        let loops: Vec<_> = (0..workers)
            .map(|_| {
                let (rt, module) = (rt.clone(), module.clone());
                tokio::spawn(async move {
                    for _ in 0..per_loop {
                        run_once(&rt, &module).await;
                    }
                })
            })
            .collect();
        for handle in loops {
            handle.await.unwrap();
        }
        (per_loop * workers) as f64 / started.elapsed().as_secs_f64()
    });
    // RSS moves by a few hundred KiB on its own: a small negative difference is 0.
    let per_slot = (rss_kib() - one_warm).max(0);
    let shared = (one_warm - loaded - per_slot).max(0);
    (per_second, shared, per_slot)
}

fn tokio_runtime(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap()
}

/// A line of /proc/self/status, in KiB (0 where there is no /proc).
fn status_kib(field: &str) -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn rss_kib() -> i64 {
    status_kib("VmRSS:")
}

/// Minor page faults of the process so far (field 10 of /proc/self/stat).
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The command name, field 2, is in parentheses and may hold spaces.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(7))
        .and_then(|field| field.parse().ok())
        .unwrap_or(0)
}

fn format_bytes(bytes: i64) -> String {
    if bytes.abs() < 1024 * 1024 {
        format!("{:.0} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
    }
}

fn format_duration(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{:.0} µs", d.as_secs_f64() * 1e6)
    } else if d < Duration::from_secs(1) {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}
