//! Runtime benchmark: what qhost costs per task, without any queue.
//!
//! Prints the compile time of a component and the load time of its cached artifact, the
//! latency of instantiate + run + drop of `echo` with one worker, and echo tasks per second
//! with one and two workers. Then, beside the same work done natively, the time per
//! attempt of `echo` and of `markdown` (rendering a 5 KB document, work that allocates),
//! each on both engines: data copied in (small components) and memory images mapped
//! (large ones, here the same component padded).
//!
//!     cargo bench -p qhost-tests --bench runtime [-- echo|markdown]
//!
//! A word runs only that part's attempt times. Run it with RUST_BACKTRACE unset.

use std::sync::Arc;
use std::time::{Duration, Instant};

use qhost::runtime::{Outcome, RunRequest, Runtime, RuntimeConfig, TaskModule};
use qhost_tests::{guest, markdown_document, padded_to_map_images};

const LATENCY_RUNS: usize = 20_000;
const THROUGHPUT_RUNS: usize = 200_000;
/// Attempts (and native renderings) timed per guest and engine, after a warm-up.
const ATTEMPT_RUNS: usize = 10_000;
const WARM_UP: usize = 1000;
/// Big enough that rendering it natively takes over 40 µs here.
const MARKDOWN_BYTES: usize = 5120;

fn main() {
    let echo = std::fs::read(guest("echo")).expect("echo guest");
    let cache = tempfile::tempdir().expect("temp dir");
    let mut config = RuntimeConfig::with_workers(1);
    config.cache_dir = Some(cache.path().to_owned());

    let parts: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with("--"))
        .collect();
    println!("{:<44} {:>14}", "measure", "value");
    if parts.is_empty() {
        overheads(&config, &echo);
    }
    for part in ["echo", "markdown"] {
        if parts.is_empty() || parts.iter().any(|p| p == part) {
            attempts(&config, part);
        }
    }
}

/// Compile and load times, echo's latency and throughput.
fn overheads(config: &RuntimeConfig, echo: &[u8]) {
    let rt = Runtime::new(config.clone()).expect("runtime");
    let started = Instant::now();
    rt.load(echo).expect("compile echo");
    row(
        "compile echo.wasm (no cache)",
        format_duration(started.elapsed()),
    );
    drop(rt);
    let rt = Runtime::new(config.clone()).expect("runtime");
    let started = Instant::now();
    rt.load(echo).expect("load echo");
    row(
        "load echo from its cached artifact",
        format_duration(started.elapsed()),
    );

    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let module = rt.load(echo).unwrap();
    let mut latencies = tokio.block_on(async {
        let mut latencies = Vec::with_capacity(LATENCY_RUNS);
        for i in 0..LATENCY_RUNS + 1000 {
            let started = Instant::now();
            let report = rt.run(&module, request()).await.unwrap();
            let elapsed = started.elapsed();
            assert_eq!(report.outcome, Outcome::Succeeded);
            if i >= 1000 {
                latencies.push(elapsed);
            }
        }
        latencies
    });
    latencies.sort();
    row(
        "echo task, 1 worker: median",
        format_duration(latencies[LATENCY_RUNS / 2]),
    );
    row(
        "echo task, 1 worker: p99",
        format_duration(latencies[LATENCY_RUNS * 99 / 100]),
    );
    drop(tokio);
    drop(rt);

    for workers in [1, 2] {
        let rate = throughput(config, echo, workers);
        row(
            &format!("echo tasks/s, {workers} worker(s)"),
            format!("{rate:.0}"),
        );
    }
}

/// A guest's work done natively: its output for an input.
type Work = fn(&[u8]) -> Vec<u8>;

/// Time per attempt of the guest `name` with one worker, on each engine, beside the same
/// work done natively; p50 and p99.
fn attempts(config: &RuntimeConfig, name: &str) {
    let (input, native): (Vec<u8>, Work) = match name {
        "echo" => (b"hello".to_vec(), |input| input.to_vec()),
        _ => (markdown_document(MARKDOWN_BYTES).into_bytes(), render),
    };
    let times = time_each(|| {
        std::hint::black_box(native(std::hint::black_box(&input)));
    });
    let native_p50 = times[times.len() / 2];
    quantiles(&format!("{name}, native"), times);
    let mut slowest = Duration::ZERO;

    let component = std::fs::read(guest(name)).expect("guest");
    let rt = Runtime::new(config.clone()).expect("runtime");
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for (engine, bytes) in [
        ("data copied", component.clone()),
        ("image mapped", padded_to_map_images(&component)),
    ] {
        let module = rt.load(&bytes).expect("load guest");
        let expected = native(&input);
        let times = time_each(|| {
            let report = tokio.block_on(attempt(&rt, &module, &input));
            assert_eq!(report, expected);
        });
        slowest = slowest.max(times[times.len() / 2]);
        quantiles(&format!("{name}, attempt, {engine}"), times);
    }
    if name == "markdown" {
        // The target's figure: the slower engine's median attempt over the native median.
        let ratio = slowest.as_secs_f64() / native_p50.as_secs_f64();
        println!("figure: guest-real-work = {ratio} x");
    }
}

/// Renders Markdown natively with the guest example's options.
fn render(input: &[u8]) -> Vec<u8> {
    use pulldown_cmark::{Options, Parser, html};
    let text = std::str::from_utf8(input).expect("UTF-8");
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS;
    let mut out = String::with_capacity(text.len() * 3 / 2);
    html::push_html(&mut out, Parser::new_ext(text, options));
    out.into_bytes()
}

async fn attempt(rt: &Runtime, module: &TaskModule, input: &[u8]) -> Vec<u8> {
    let request = RunRequest {
        input: input.to_vec(),
        ..RunRequest::default()
    };
    let report = rt.run(module, request).await.unwrap();
    assert_eq!(report.outcome, Outcome::Succeeded);
    report.output.expect("an output")
}

/// The times of `ATTEMPT_RUNS` calls of `f`, after `WARM_UP` untimed ones, sorted.
fn time_each(mut f: impl FnMut()) -> Vec<Duration> {
    let mut times = Vec::with_capacity(ATTEMPT_RUNS);
    for i in 0..WARM_UP + ATTEMPT_RUNS {
        let started = Instant::now();
        f();
        if i >= WARM_UP {
            times.push(started.elapsed());
        }
    }
    times.sort();
    times
}

fn quantiles(name: &str, times: Vec<Duration>) {
    row(
        &format!("{name}: p50"),
        format_duration(times[times.len() / 2]),
    );
    row(
        &format!("{name}: p99"),
        format_duration(times[times.len() * 99 / 100]),
    );
}

fn request() -> RunRequest {
    RunRequest {
        input: b"hello".to_vec(),
        ..RunRequest::default()
    }
}

fn throughput(config: &RuntimeConfig, echo: &[u8], workers: usize) -> f64 {
    let mut config = config.clone();
    config.workers = workers;
    let rt = Arc::new(Runtime::new(config).unwrap());
    let module = rt.load(echo).unwrap();
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap();
    tokio.block_on(async {
        let per_loop = THROUGHPUT_RUNS / workers;
        let started = Instant::now();
        let loops: Vec<_> = (0..workers)
            .map(|_| {
                let (rt, module) = (rt.clone(), module.clone());
                tokio::spawn(async move {
                    for _ in 0..per_loop {
                        let report = rt.run(&module, request()).await.unwrap();
                        assert_eq!(report.outcome, Outcome::Succeeded);
                    }
                })
            })
            .collect();
        for handle in loops {
            handle.await.unwrap();
        }
        (per_loop * workers) as f64 / started.elapsed().as_secs_f64()
    })
}

fn row(name: &str, value: String) {
    println!("{name:<44} {value:>14}");
}

fn format_duration(d: Duration) -> String {
    if d < Duration::from_micros(1) {
        format!("{} ns", d.as_nanos())
    } else if d < Duration::from_millis(1) {
        format!("{:.1} µs", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    }
}
