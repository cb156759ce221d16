//! `qhost serve` benchmark: the HTTP API on the SQLite store, served in this process on a
//! loopback port and driven by a blocking HTTP client, as a caller in any language would.
//!
//! - Submit throughput: requests of 1,000 `echo` tasks each, one after the other, into a
//!   batch whose order 0 is a long `sleep`: every task is durably accepted and then waits
//!   behind that gate, so the figure is the accept rate alone (no task runs meanwhile, but
//!   the claim loop is woken by every submission and looks for work, as it would).
//! - Submit-to-done latency of one `echo` task on an idle server: submit into an open batch,
//!   then long-poll the batch's wait until it has ended; p50/p90/p99 over sequential tasks.
//!   Also the same through `POST /v1/tasks` (a batch of its own per task).
//!
//!     cargo bench -p qhost-tests --bench serve
//!
//! The figures `benches/targets.toml` reads are also printed as
//! `figure: <id> = <value> <unit>`. Run it with RUST_BACKTRACE unset.

use std::sync::Arc;
use std::time::{Duration, Instant};

use qhost::api::{self, AppState};
use qhost::runtime::{Runtime, RuntimeConfig};
use qhost::scheduler::node::Node;
use qhost::scheduler::{Scheduler, SchedulerConfig};
use qhost::store::sqlite::SqliteStore;
use serde_json::{Value, json};

const TOKEN: &str = "bench-admin-token-0123456789";
const REQUESTS: usize = 100;
const TASKS_PER_REQUEST: usize = 1000;
const LATENCY_RUNS: usize = 500;
const WARMUP: usize = 50;

struct Bench {
    url: String,
    agent: ureq::Agent,
}

impl Bench {
    fn call(&self, method: &str, path: &str, token: &str, body: Option<&Value>) -> Value {
        let request = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.url))
            .header("Authorization", format!("Bearer {token}"))
            .header("content-type", "application/json");
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut response = self
            .agent
            .run(request.body(body).unwrap())
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let text = response.body_mut().read_to_string().unwrap();
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    fn open(&self) -> (i64, String) {
        let opened = self.call("POST", "/v1/batches", TOKEN, Some(&json!({})));
        (
            opened["batch"]["id"].as_i64().unwrap(),
            opened["handle"].as_str().unwrap().to_owned(),
        )
    }
}

/// Starts a server on a loopback port in a thread of its own; it lives as long as the
/// process.
fn start(data: &std::path::Path, workers: usize) -> Bench {
    let data = data.to_owned();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        tokio.block_on(async move {
            let store = Arc::new(SqliteStore::open(&data.join("qhost.db")).unwrap());
            let mut config = RuntimeConfig::with_workers(workers);
            config.cache_dir = Some(data.join("artifacts"));
            let runtime = Arc::new(Runtime::new(config).unwrap());
            let scheduler = Scheduler::new(store, runtime, SchedulerConfig::new("bench"));
            let _node = Node::start(scheduler.clone()).await.unwrap();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let state = AppState::new(scheduler, TOKEN);
            api::serve(listener, state, Default::default(), std::future::pending()).await;
        });
    });
    let address = rx.recv().expect("the server started");
    Bench {
        url: format!("http://{address}"),
        agent: ureq::Agent::config_builder()
            .http_status_as_error(true)
            .build()
            .into(),
    }
}

fn upload(bench: &Bench, guest: &str) {
    let bytes = std::fs::read(qhost_tests::guest(guest)).unwrap();
    bench
        .agent
        .post(format!("{}/v1/modules?name={guest}", bench.url))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .send(&bytes[..])
        .unwrap();
}

fn main() {
    qhost::cli::quiet_library_backtraces();
    if std::env::var_os("RUST_BACKTRACE").is_some() {
        eprintln!("warning: RUST_BACKTRACE is set; figures will be lower than they should");
    }
    throughput();
    latency();
}

fn throughput() {
    let data = tempfile::tempdir().unwrap();
    let bench = start(data.path(), 2);
    upload(&bench, "echo");
    upload(&bench, "sleep");
    let (batch, handle) = bench.open();
    let path = format!("/v1/batches/{batch}/tasks");
    let gate = json!({"tasks": [{"module": "sleep", "input": "600000", "timeout": "15m"}]});
    bench.call("POST", &path, &handle, Some(&gate));
    let tasks: Vec<Value> = (0..TASKS_PER_REQUEST)
        .map(|i| json!({"module": "echo", "input": format!("task {i}"), "order": 1}))
        .collect();
    let body = json!({ "tasks": tasks });
    let mut each = Vec::with_capacity(REQUESTS);
    let started = Instant::now();
    for _ in 0..REQUESTS {
        let request = Instant::now();
        let answer = bench.call("POST", &path, &handle, Some(&body));
        each.push(request.elapsed());
        assert_eq!(answer["tasks"].as_array().unwrap().len(), TASKS_PER_REQUEST);
    }
    let elapsed = started.elapsed();
    let total = REQUESTS * TASKS_PER_REQUEST;
    let info = bench.call("GET", &format!("/v1/batches/{batch}"), &handle, None);
    assert_eq!(
        info["progress"]["waiting"].as_u64().unwrap() as usize
            + info["progress"]["ready"].as_u64().unwrap() as usize,
        total,
        "every task accepted and none ran: {info}"
    );
    each.sort();
    let rate = total as f64 / elapsed.as_secs_f64();
    println!(
        "submit throughput over HTTP ({REQUESTS} requests of {TASKS_PER_REQUEST} tasks, sequential, accept only)"
    );
    println!(
        "  {rate:.0} tasks/s  ({total} tasks in {:.2?}; per request p50 {:.2?}, p99 {:.2?})",
        elapsed,
        each[each.len() / 2],
        each[each.len() * 99 / 100],
    );
    println!("figure: submit-http-100k = {rate} tasks/s");
    bench.call(
        "POST",
        &format!("/v1/batches/{batch}/cancel"),
        &handle,
        None,
    );
}

fn latency() {
    let data = tempfile::tempdir().unwrap();
    let bench = start(data.path(), 2);
    upload(&bench, "echo");
    let (batch, handle) = bench.open();
    let submit = format!("/v1/batches/{batch}/tasks");
    let wait = format!("/v1/batches/{batch}/wait?timeout=10s");
    let task = json!({"tasks": [{"module": "echo", "input": "ping"}]});
    let mut times = Vec::with_capacity(LATENCY_RUNS);
    for run in 0..WARMUP + LATENCY_RUNS {
        let started = Instant::now();
        bench.call("POST", &submit, &handle, Some(&task));
        let info = bench.call("GET", &wait, &handle, None);
        let took = started.elapsed();
        assert_eq!(
            info["progress"]["succeeded"].as_u64().unwrap() as usize,
            run + 1
        );
        if run >= WARMUP {
            times.push(took);
        }
    }
    let p50 = report(
        &format!(
            "submit-to-done latency, one echo task into an open batch, then wait ({LATENCY_RUNS} sequential)"
        ),
        times,
    );
    println!(
        "figure: submit-done-p50 = {} ms",
        p50.as_secs_f64() * 1000.0
    );

    let alone = json!({"module": "echo", "input": "ping"});
    let mut times = Vec::with_capacity(LATENCY_RUNS);
    for run in 0..WARMUP + LATENCY_RUNS {
        let started = Instant::now();
        let submitted = bench.call("POST", "/v1/tasks", TOKEN, Some(&alone));
        let wait = format!("/v1/batches/{}/wait?timeout=10s", submitted["batch"]);
        let info = bench.call("GET", &wait, TOKEN, None);
        let took = started.elapsed();
        assert_eq!(info["progress"]["succeeded"], 1);
        if run >= WARMUP {
            times.push(took);
        }
    }
    report(
        &format!(
            "submit-to-done latency, POST /v1/tasks (a batch of its own), then wait ({LATENCY_RUNS} sequential)"
        ),
        times,
    );
}

/// Prints the percentiles of `times`; returns the median.
fn report(what: &str, mut times: Vec<Duration>) -> Duration {
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    println!("{what}");
    println!(
        "  p50 {:.2?}  p90 {:.2?}  p99 {:.2?}  max {:.2?}",
        at(0.50),
        at(0.90),
        at(0.99),
        times[times.len() - 1]
    );
    at(0.50)
}
