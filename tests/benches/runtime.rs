//! Runtime benchmark: what qhost costs per task, without any queue.
//!
//! Prints the compile time of a component and the load time of its cached artifact, the
//! latency of instantiate + run + drop of `echo` with one worker, and echo tasks per second
//! with one and two workers.
//!
//!     cargo bench -p qhost-tests --bench runtime
//!
//! Run it with RUST_BACKTRACE unset.

use std::sync::Arc;
use std::time::{Duration, Instant};

use qhost::runtime::{Outcome, RunRequest, Runtime, RuntimeConfig};
use qhost_tests::guest;

const LATENCY_RUNS: usize = 20_000;
const THROUGHPUT_RUNS: usize = 200_000;

fn main() {
    let echo = std::fs::read(guest("echo")).expect("echo guest");
    let cache = tempfile::tempdir().expect("temp dir");
    let mut config = RuntimeConfig::with_workers(1);
    config.cache_dir = Some(cache.path().to_owned());

    println!("{:<44} {:>14}", "measure", "value");
    let rt = Runtime::new(config.clone()).expect("runtime");
    let started = Instant::now();
    rt.load(&echo).expect("compile echo");
    row(
        "compile echo.wasm (no cache)",
        format_duration(started.elapsed()),
    );
    drop(rt);
    let rt = Runtime::new(config.clone()).expect("runtime");
    let started = Instant::now();
    rt.load(&echo).expect("load echo");
    row(
        "load echo from its cached artifact",
        format_duration(started.elapsed()),
    );

    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let module = rt.load(&echo).unwrap();
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
        let rate = throughput(&config, &echo, workers);
        row(
            &format!("echo tasks/s, {workers} worker(s)"),
            format!("{rate:.0}"),
        );
    }
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
    if d < Duration::from_millis(1) {
        format!("{:.1} µs", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    }
}
