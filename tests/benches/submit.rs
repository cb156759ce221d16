//! Submission at scale and submit → start latency, over HTTP to a server run in this
//! process as `qhost serve` runs one (a store, a node with 2 slots, the API on a loopback
//! port), driven by a blocking HTTP client.
//!
//! - `submit-1m`: 1,000,000 `echo` tasks submitted into one batch by one client, 1,000 per
//!   request, one request after the other, behind an order-0 `sleep` task, so none runs:
//!   the accept rate alone, on SQLite. Then the bytes on disk per queued task: the database
//!   file plus its WAL, each read with the server stopped after a
//!   `wal_checkpoint(TRUNCATE)`, after the submissions (and the gate) less before them
//!   (the modules and the batch), divided by the tasks submitted.
//! - `latency-sqlite`, `latency-postgres`: on an idle server, one `echo` task submitted at
//!   a time into an open batch; once it has ended, its attempt's `started_at` is read from
//!   the execution log (`GET /v1/attempts?task=`). The figure is that start (the moment the
//!   runtime began the attempt in its slot) less the moment, read just before the submit
//!   request was sent, both from this machine's clock in microseconds. p50 and p99 over
//!   1,000 tasks after 50 of warm-up.
//! - `latency-child-sqlite`: the same for children a running task submits (the `spawner`
//!   guest's `trickle`: one child at a time, 20 ms apart, on the server's other slot), from
//!   the guest's clock just before its submit call to the child's start; beside it the
//!   figure of `latency-sqlite`, measured again in the same run, and the difference of
//!   their p50s, `child-submit-start`.
//! - `disk-postgres`: the bytes on disk per task on PostgreSQL, queued (100,000 tasks
//!   behind a gate) and ended (once they ran, after a `VACUUM`): the schema's tables with
//!   their indexes. `submit-1m` gives the same two for SQLite: after its submissions it
//!   runs every task and measures the file again.
//!
//!     cargo bench -p qhost-tests --bench submit [-- submit-1m latency-sqlite latency-postgres disk-postgres latency-child-sqlite]
//!
//! With no name, all five run. PostgreSQL is the server `QHOST_TEST_PG_URL` names (by
//! default postgres://postgres@127.0.0.1:5432/test), in a schema of this run's own.
//! Each figure is printed as `figure: <id> = <value> <unit>`, the line
//! `benches/targets.toml` reads. Run it with RUST_BACKTRACE unset.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use qhost::api::{self, AppState};
use qhost::runtime::{Runtime, RuntimeConfig};
use qhost::scheduler::node::Node;
use qhost::scheduler::{Scheduler, SchedulerConfig};
use qhost::store::AttemptRecord;
use serde_json::{Value, json};

const TOKEN: &str = "bench-admin-token-0123456789";
const SUBMIT_REQUESTS: usize = 1000;
const TASKS_PER_REQUEST: usize = 1000;
const LATENCY_RUNS: usize = 1000;
const WARMUP: usize = 50;
/// Tasks of the PostgreSQL disk figures.
const DISK_TASKS: usize = 100_000;

/// A server in a thread of its own, and a client of it.
struct Bench {
    url: String,
    agent: ureq::Agent,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Bench {
    /// Serves the store at `db` (a `sqlite:` or `postgres://` URL) with 2 slots, its
    /// compiled artifacts under `data`; returns once it listens.
    fn start(db: &str, data: &Path) -> Bench {
        let (db, data) = (db.to_owned(), data.to_owned());
        let (address_tx, address_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let tokio = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .unwrap();
            tokio.block_on(async move {
                let store = qhost::store::open(&db, "bench").await.unwrap();
                let mut config = RuntimeConfig::with_workers(2);
                config.cache_dir = Some(data.join("artifacts"));
                let runtime = Arc::new(Runtime::new(config).unwrap());
                let scheduler = Scheduler::new(store, runtime, SchedulerConfig::new("bench"));
                let node = Node::start(scheduler.clone()).await.unwrap();
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                address_tx.send(listener.local_addr().unwrap()).unwrap();
                let state = AppState::new(scheduler, TOKEN);
                api::serve(listener, state, Default::default(), async move {
                    let _ = stopped.await;
                })
                .await;
                // Hands back what still runs (the gate's sleep), so the store is left idle.
                node.stop(Duration::from_secs(1)).await.unwrap();
            });
        });
        let address = address_rx.recv().expect("the server started");
        Bench {
            url: format!("http://{address}"),
            agent: ureq::Agent::config_builder()
                .http_status_as_error(true)
                .build()
                .into(),
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn call(&self, method: &str, path: &str, token: &str, body: Option<String>) -> Value {
        let request = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.url))
            .header("Authorization", format!("Bearer {token}"))
            .header("content-type", "application/json");
        let mut response = self
            .agent
            .run(request.body(body.unwrap_or_default()).unwrap())
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let text = response.body_mut().read_to_string().unwrap();
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    /// Submits an order-0 `sleep` task of ten minutes to the batch at `path`, so that
    /// nothing behind it runs; returns its id, and a request of `TASKS_PER_REQUEST` `echo`
    /// tasks of order 1 to submit behind it.
    fn gate_and_request(&self, path: &str, handle: &str) -> (Value, String) {
        let gate = json!({"tasks": [{"module": "sleep", "input": "600000", "timeout": "15m"}]});
        let gate = self.call("POST", path, handle, Some(gate.to_string()))["tasks"][0].clone();
        let tasks: Vec<Value> = (0..TASKS_PER_REQUEST)
            .map(|i| json!({"module": "echo", "input": format!("task {i}"), "order": 1}))
            .collect();
        (gate, json!({ "tasks": tasks }).to_string())
    }

    /// Returns once every task of `batch` has ended.
    fn wait(&self, batch: i64, handle: &str) {
        loop {
            let path = format!("/v1/batches/{batch}/wait?timeout=60s");
            let progress = &self.call("GET", &path, handle, None)["progress"];
            let count = |state: &str| progress[state].as_u64().unwrap();
            let total: u64 = progress
                .as_object()
                .unwrap()
                .values()
                .filter_map(Value::as_u64)
                .sum();
            if count("succeeded") + count("failed") + count("cancelled") == total {
                return;
            }
        }
    }

    fn open(&self) -> (i64, String) {
        let opened = self.call("POST", "/v1/batches", TOKEN, Some("{}".to_owned()));
        (
            opened["batch"]["id"].as_i64().unwrap(),
            opened["handle"].as_str().unwrap().to_owned(),
        )
    }

    fn upload(&self, guest: &str) {
        let bytes = std::fs::read(qhost_tests::guest(guest)).unwrap();
        self.agent
            .post(format!("{}/v1/modules?name={guest}", self.url))
            .header("Authorization", format!("Bearer {TOKEN}"))
            .send(&bytes[..])
            .unwrap();
    }

    /// Stops the server and its node, and waits until they have let go of the store.
    fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.thread.take().unwrap().join().unwrap();
    }
}

fn main() {
    qhost::cli::quiet_library_backtraces();
    if std::env::var_os("RUST_BACKTRACE").is_some() {
        eprintln!("warning: RUST_BACKTRACE is set; figures will be lower than they should");
    }
    // `cargo bench` passes `--bench`; names select the parts.
    let names: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let parts = [
        "submit-1m",
        "latency-sqlite",
        "latency-postgres",
        "disk-postgres",
        "latency-child-sqlite",
    ];
    if let Some(unknown) = names.iter().find(|n| !parts.contains(&n.as_str())) {
        eprintln!("unknown part {unknown:?}: give any of {parts:?}, or none for all");
        std::process::exit(2);
    }
    let wanted = |part: &str| names.is_empty() || names.iter().any(|n| n == part);
    if wanted("submit-1m") {
        submit_1m();
    }
    if wanted("latency-sqlite") {
        let data = tempfile::tempdir().unwrap();
        let db = format!("sqlite:{}", data.path().join("qhost.db").display());
        latency("sqlite", &db, data.path());
    }
    if wanted("disk-postgres") {
        disk_postgres();
    }
    if wanted("latency-child-sqlite") {
        let data = tempfile::tempdir().unwrap();
        let db = format!("sqlite:{}", data.path().join("qhost.db").display());
        latency_child(&db, data.path());
    }
    if wanted("latency-postgres") {
        let tokio = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // Fails, saying how to give one, when no PostgreSQL answers.
        let db = tokio.block_on(qhost_tests::pg::TestDb::new());
        let data = tempfile::tempdir().unwrap();
        latency("postgres", &db.url, data.path());
        drop(tokio);
        drop(db);
    }
}

fn figure(id: &str, value: impl std::fmt::Display, unit: &str) {
    println!("figure: {id} = {value} {unit}");
}

fn submit_1m() {
    let data = tempfile::tempdir().unwrap();
    let file = data.path().join("qhost.db");
    let db = format!("sqlite:{}", file.display());
    let bench = Bench::start(&db, data.path());
    bench.upload("echo");
    bench.upload("sleep");
    let (batch, handle) = bench.open();
    // A running server holds the file's lock: measure with it stopped, then start it again.
    bench.stop();
    let before = bytes_on_disk(&file);
    let bench = Bench::start(&db, data.path());
    let path = format!("/v1/batches/{batch}/tasks");
    let (gate, body) = bench.gate_and_request(&path, &handle);
    let started = Instant::now();
    for _ in 0..SUBMIT_REQUESTS {
        let answer = bench.call("POST", &path, &handle, Some(body.clone()));
        assert_eq!(answer["tasks"].as_array().unwrap().len(), TASKS_PER_REQUEST);
    }
    let elapsed = started.elapsed();
    let total = SUBMIT_REQUESTS * TASKS_PER_REQUEST;
    let info = bench.call("GET", &format!("/v1/batches/{batch}"), &handle, None);
    let queued = info["progress"]["waiting"].as_u64().unwrap() as usize
        + info["progress"]["ready"].as_u64().unwrap() as usize;
    assert_eq!(queued, total, "every task accepted and none ran: {info}");
    println!(
        "submitted {total} tasks over HTTP ({SUBMIT_REQUESTS} sequential requests of {TASKS_PER_REQUEST}) in {:.3} s",
        elapsed.as_secs_f64()
    );
    figure(
        "submit-http-1m",
        total as f64 / elapsed.as_secs_f64(),
        "tasks/s",
    );
    bench.stop();
    let after = bytes_on_disk(&file);
    println!(
        "database + WAL after a truncating checkpoint: {before} bytes before, {after} bytes after"
    );
    figure(
        "disk-per-queued-task-sqlite",
        (after - before) as f64 / total as f64,
        "B",
    );

    // Then every task run, and what each leaves once ended: its row and its attempt.
    let bench = Bench::start(&db, data.path());
    bench.call("POST", &format!("/v1/tasks/{gate}/cancel"), TOKEN, None);
    bench.wait(batch, &handle);
    bench.stop();
    let ended = bytes_on_disk(&file);
    println!("after every task ran: {ended} bytes");
    figure(
        "disk-per-ended-task-sqlite",
        (ended - before) as f64 / total as f64,
        "B",
    );
}

/// Bytes per task on PostgreSQL, queued and ended: the tables and indexes of this run's
/// schema, before and after `DISK_TASKS` tasks are queued behind a gate, and again once
/// they have run and a `VACUUM` has made the dead rows' space reusable (the files keep it).
fn disk_postgres() {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let db = tokio.block_on(qhost_tests::pg::TestDb::new());
    let data = tempfile::tempdir().unwrap();
    let bench = Bench::start(&db.url, data.path());
    bench.upload("echo");
    bench.upload("sleep");
    let (batch, handle) = bench.open();
    let size = || tokio.block_on(schema_bytes(&db.url));
    let before = size();
    let path = format!("/v1/batches/{batch}/tasks");
    let (gate, body) = bench.gate_and_request(&path, &handle);
    for _ in 0..DISK_TASKS / TASKS_PER_REQUEST {
        bench.call("POST", &path, &handle, Some(body.clone()));
    }
    let queued = size();
    figure(
        "disk-per-queued-task-postgres",
        (queued - before) as f64 / DISK_TASKS as f64,
        "B",
    );
    bench.call("POST", &format!("/v1/tasks/{gate}/cancel"), TOKEN, None);
    bench.wait(batch, &handle);
    bench.stop();
    tokio.block_on(vacuum(&db.url));
    let ended = size();
    println!(
        "schema: {before} bytes before, {queued} with {DISK_TASKS} tasks queued, {ended} once they ran"
    );
    figure(
        "disk-per-ended-task-postgres",
        (ended - before) as f64 / DISK_TASKS as f64,
        "B",
    );
    drop(tokio);
    drop(db);
}

/// The bytes on disk of every table of the schema `url` selects, with its indexes and
/// TOAST, as PostgreSQL counts them.
async fn schema_bytes(url: &str) -> u64 {
    let client = connect_pg(url).await;
    let row = client
        .query_one(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname = current_schema() AND c.relkind = 'r'",
            &[],
        )
        .await
        .unwrap();
    row.get::<_, i64>(0) as u64
}

async fn vacuum(url: &str) {
    connect_pg(url).await.batch_execute("VACUUM").await.unwrap();
}

async fn connect_pg(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// The database file's size plus its WAL's, after checkpointing the WAL into the file and
/// truncating it (retried while a reader holds it); the server must be stopped, as it holds
/// the file's lock while it runs.
fn bytes_on_disk(file: &Path) -> u64 {
    let conn = rusqlite::Connection::open(file).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    for _ in 0..50 {
        let busy: i64 = conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| row.get(0))
            .unwrap();
        if busy == 0 {
            let size = |p: PathBuf| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
            let mut wal = file.as_os_str().to_owned();
            wal.push("-wal");
            return size(file.to_owned()) + size(PathBuf::from(wal));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the WAL of {} could not be checkpointed", file.display());
}

fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64
}

/// Measures submit → start of tasks submitted one at a time; returns the p50 in µs.
fn latency(driver: &str, db: &str, data: &Path) -> i64 {
    let bench = Bench::start(db, data);
    bench.upload("echo");
    let (batch, handle) = bench.open();
    let submit = format!("/v1/batches/{batch}/tasks");
    let wait = format!("/v1/batches/{batch}/wait?timeout=10s");
    let task = json!({"tasks": [{"module": "echo", "input": "ping"}]}).to_string();
    let mut micros = Vec::with_capacity(LATENCY_RUNS);
    for run in 0..WARMUP + LATENCY_RUNS {
        let sent = now_micros();
        let submitted = bench.call("POST", &submit, &handle, Some(task.clone()));
        let id = submitted["tasks"][0].as_i64().unwrap();
        let info = bench.call("GET", &wait, &handle, None);
        assert_eq!(
            info["progress"]["succeeded"].as_u64().unwrap() as usize,
            run + 1,
            "{info}"
        );
        let log = bench.call(
            "GET",
            &format!("/v1/attempts?batch={batch}&task={id}"),
            &handle,
            None,
        );
        let attempts: Vec<AttemptRecord> = serde_json::from_value(log["attempts"].clone())
            .unwrap_or_else(|e| panic!("the log of task {id}: {e}: {log}"));
        assert_eq!(attempts.len(), 1, "task {id} ran once: {log}");
        if run >= WARMUP {
            micros.push(attempts[0].started_at - sent);
        }
    }
    bench.stop();
    percentiles(&format!("submit-start-{driver}"), "tasks", micros)
}

/// Prints the p50, p99 and max of `micros`, and the p50 and p99 as figures `{id}-p50` and
/// `{id}-p99`; returns the p50.
fn percentiles(id: &str, what: &str, mut micros: Vec<i64>) -> i64 {
    micros.sort_unstable();
    let at = |q: usize| micros[(micros.len() - 1) * q / 100];
    println!(
        "{id}: {} {what} one at a time: p50 {} µs, p99 {} µs, max {} µs",
        micros.len(),
        at(50),
        at(99),
        micros[micros.len() - 1]
    );
    figure(&format!("{id}-p50"), ms(at(50)), "ms");
    figure(&format!("{id}-p99"), ms(at(99)), "ms");
    at(50)
}

/// Microseconds as milliseconds with all their digits: nothing is rounded.
fn ms(us: i64) -> String {
    let sign = if us < 0 { "-" } else { "" };
    format!("{sign}{}.{:03}", us.abs() / 1000, us.abs() % 1000)
}

/// Submit → start of children a running task submits one at a time, beside that of tasks
/// a client submits; the difference of their p50s is `child-submit-start`.
fn latency_child(db: &str, data: &Path) {
    let submitted = latency("sqlite", db, data);
    let bench = Bench::start(db, data);
    bench.upload("spawner");
    let children = WARMUP + LATENCY_RUNS;
    let opened = bench.call(
        "POST",
        "/v1/batches",
        TOKEN,
        Some(json!({"quotas": {"children": children}}).to_string()),
    );
    let batch = opened["batch"]["id"].as_i64().unwrap();
    let task = json!({"tasks": [{"module": "spawner", "input": format!("trickle:{children}"),
        "timeout": "10m"}]});
    let parent = bench.call(
        "POST",
        &format!("/v1/batches/{batch}/tasks"),
        TOKEN,
        Some(task.to_string()),
    )["tasks"][0]
        .as_i64()
        .unwrap();
    bench.wait(batch, TOKEN);
    let output = bench
        .agent
        .get(format!("{}/v1/tasks/{parent}/output", bench.url))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .call()
        .and_then(|mut r| r.body_mut().read_to_string())
        .unwrap_or_else(|e| panic!("the output of task {parent}: {e}"));
    let mut started = std::collections::HashMap::new();
    let mut after = 0;
    loop {
        let page = bench.call(
            "GET",
            &format!("/v1/attempts?batch={batch}&after={after}&limit=1000"),
            TOKEN,
            None,
        );
        let attempts: Vec<AttemptRecord> = serde_json::from_value(page["attempts"].clone())
            .unwrap_or_else(|e| panic!("the log of batch {batch}: {e}: {page}"));
        if attempts.is_empty() {
            break;
        }
        after = page["next"].as_i64().unwrap();
        started.extend(attempts.iter().map(|a| (a.task, a.started_at)));
    }
    bench.stop();
    let micros: Vec<i64> = output
        .lines()
        .skip(WARMUP)
        .map(|line| {
            let (id, at) = line.split_once(' ').expect("`ID MICROS`");
            let id: i64 = id.parse().unwrap();
            started[&id] - at.parse::<i64>().unwrap()
        })
        .collect();
    assert_eq!(micros.len(), LATENCY_RUNS, "every child ran: {output}");
    let child = percentiles("submit-start-child-sqlite", "children", micros);
    figure("child-submit-start", ms(child - submitted), "ms");
}
