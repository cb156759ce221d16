//! Schedules on real `qhost serve` processes, with the real clock: a one-second schedule
//! fires every second, on time and once, on one SQLite server and on three PostgreSQL
//! nodes, and again after a restart, the ticks missed meanwhile made up for; a plan asking more than
//! the server allows is refused when the schedule is created, and its ticks fail, saying
//! why, once the server's maxima shrink below it; a plan's module name keeps working when
//! the component gets a second name.

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use qhost::store::{Micros, now_micros};
use qhost_tests::pg::TestDb;
use qhost_tests::serve_node::{ServeNode, TOKEN};
use qhost_tests::server::call;
use serde_json::{Value, json};

const SECOND: Micros = 1_000_000;
/// How long each run of a one-second schedule is watched.
const WATCHED: Micros = 8 * SECOND;
/// How late a tick may fire.
const ON_TIME: Micros = 100_000;

/// A one-second schedule `s` whose ticks each open a batch of one `echo` task, catching up
/// the last three ticks missed (by more than a minute) while no node ran.
fn create_every_second(node: &ServeNode) {
    node.call(
        "POST",
        "/v1/schedules",
        Some(json!({
            "name": "s",
            "cron": "* * * * * *",
            "overlap": "allow",
            "catch_up": "all:3",
            "plan": {"tasks": [{"module": "echo", "input": "tick"}]},
        })),
    );
}

/// The ticks of schedule `s` that fell due in `(from, until]`, oldest first, once one due
/// at or after `until` has been handled.
fn ticks_until(node: &ServeNode, from: Micros, until: Micros) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let view = node.call("GET", "/v1/schedules/s", None);
        let ticks = view["ticks"].as_array().unwrap();
        let due = |t: &Value| t["due_at"].as_i64().unwrap();
        if ticks.iter().any(|t| due(t) >= until) {
            let mut window: Vec<Value> = ticks
                .iter()
                .filter(|t| due(t) > from && due(t) <= until)
                .cloned()
                .collect();
            window.reverse();
            return window;
        }
        assert!(
            Instant::now() < deadline,
            "no tick due by {until} was handled: {view}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// At least 7 ticks in 8 s, each fired once, with a batch of its own, within 100 ms of
/// when it fell due.
fn assert_on_time(ticks: &[Value], context: &str) {
    assert!(
        ticks.len() >= 7,
        "{context}: {} ticks in 8 s: {ticks:?}",
        ticks.len()
    );
    let mut seen = HashSet::new();
    let mut batches = HashSet::new();
    for tick in ticks {
        let (due, fired) = (
            tick["due_at"].as_i64().unwrap(),
            tick["fired_at"].as_i64().unwrap(),
        );
        assert_eq!(tick["result"], "fired", "{context}: {tick}");
        assert!(
            seen.insert(due),
            "{context}: the tick due at {due} fired twice"
        );
        assert!(
            batches.insert(tick["batch"].as_i64().unwrap()),
            "{context}: two ticks opened one batch"
        );
        assert!(
            (0..=ON_TIME).contains(&(fired - due)),
            "{context}: the tick due at {due} fired {} ms late",
            (fired - due) / 1000
        );
    }
}

/// Each tick of `s` opened one batch, named after the tick: no name twice, no tick
/// without its batch.
fn assert_one_batch_per_tick(node: &ServeNode, context: &str) {
    let view = node.call("GET", "/v1/schedules/s", None);
    let page = node.call("GET", "/v1/batches?limit=500", None);
    let mut names = HashSet::new();
    let mut ids = HashSet::new();
    for batch in page["batches"].as_array().unwrap() {
        let name = batch["name"].as_str().unwrap_or_default();
        if name.starts_with("s@") {
            assert!(
                names.insert(name.to_owned()),
                "{context}: two batches of {name}"
            );
            ids.insert(batch["id"].as_i64().unwrap());
        }
    }
    for tick in view["ticks"].as_array().unwrap() {
        if let Some(batch) = tick["batch"].as_i64() {
            assert!(
                ids.contains(&batch),
                "{context}: no batch {batch} of {tick}"
            );
        }
    }
}

/// Runs the one-second schedule on `start`'s nodes: watched for 8 s; then every node
/// stops for 3 s and starts again: the ticks missed meanwhile fire at once, each once, and
/// the next 8 s are on time again.
fn every_second_and_after_a_restart(start: impl Fn() -> Vec<ServeNode>, context: &str) {
    let nodes = start();
    nodes[0].upload("echo");
    create_every_second(&nodes[0]);
    let from = now_micros();
    let ticks = ticks_until(&nodes[nodes.len() - 1], from, from + WATCHED);
    assert_on_time(&ticks, context);

    for node in nodes {
        assert!(node.stop().success(), "{context}: a node failed to stop");
    }
    let stopped = now_micros();
    // The outage: ticks fall due while no node runs.
    std::thread::sleep(Duration::from_secs(3));
    let nodes = start();
    let back = now_micros();
    let ticks = ticks_until(&nodes[0], stopped, back + WATCHED);
    let (missed, on_time): (Vec<Value>, Vec<Value>) = ticks
        .into_iter()
        .partition(|t| t["due_at"].as_i64().unwrap() <= back);
    // Missed by less than a minute, they fire late, at the restart: each once.
    let caught_up: Vec<i64> = missed
        .iter()
        .filter(|t| t["result"] == "fired")
        .map(|t| t["due_at"].as_i64().unwrap())
        .collect();
    assert!(
        caught_up.len() >= 2,
        "{context}: the ticks missed in 3 s fire: {missed:?}"
    );
    assert_eq!(
        caught_up.iter().collect::<HashSet<_>>().len(),
        caught_up.len(),
        "{context}: a missed tick fired twice"
    );
    assert_on_time(&on_time, &format!("{context}, after the restart"));
    assert_one_batch_per_tick(&nodes[0], context);
    for node in nodes {
        assert!(node.stop().success(), "{context}: a node failed to stop");
    }
}

#[test]
fn a_one_second_schedule_fires_every_second_on_one_sqlite_server() {
    let data = tempfile::tempdir().unwrap();
    every_second_and_after_a_restart(
        || vec![ServeNode::start(data.path(), "n1", 2, |_| {})],
        "SQLite",
    );
}

#[test]
fn a_one_second_schedule_fires_every_second_on_three_postgres_nodes() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDb::new());
    let data = tempfile::tempdir().unwrap();
    every_second_and_after_a_restart(
        || ServeNode::on_database(&db.url, data.path(), &["n1", "n2", "n3"], 2),
        "three PostgreSQL nodes",
    );
}

/// A SQLite node on `data` with more settings from `configure`.
fn node(data: &Path, configure: impl FnOnce(&mut Command)) -> ServeNode {
    ServeNode::start(data, "n1", 1, configure)
}

/// `POST path` with `body` as the admin: the status and the answer.
fn post(node: &ServeNode, path: &str, body: Value) -> (u16, Value) {
    call(
        "POST",
        &format!("{}{path}", node.server.url),
        Some(TOKEN),
        Some(body),
    )
}

#[test]
fn a_plan_beyond_the_servers_maxima_is_refused_at_creation_and_at_its_ticks() {
    let data = tempfile::tempdir().unwrap();
    let server = node(data.path(), |command| {
        command.args(["--max-timeout", "1m"]);
    });
    server.upload("echo");
    let schedule = |name: &str, catch_up: &str, tasks: Vec<Value>| {
        json!({
            "name": name,
            "cron": "* * * * * *",
            "overlap": "allow",
            "catch_up": catch_up,
            "plan": {"tasks": tasks},
        })
    };
    let task = |timeout: &str| json!({"module": "echo", "input": "x", "timeout": timeout});

    let (status, refused) = post(
        &server,
        "/v1/schedules",
        schedule("big", "none", vec![task("10m")]),
    );
    assert_eq!(status, 400, "{refused}");
    let detail = refused["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("field `plan`: task 0: field `limits`:") && detail.contains("timeout"),
        "{detail}"
    );
    // Catching up may not open more than 100,000 tasks at once.
    let many = vec![task("1s"); 1001];
    let (status, refused) = post(&server, "/v1/schedules", schedule("many", "all:100", many));
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["detail"]
            .as_str()
            .unwrap()
            .starts_with("field `catch_up`: `all:100`"),
        "{refused}"
    );
    let (status, none) = call(
        "GET",
        &format!("{}/v1/schedules", server.server.url),
        Some(TOKEN),
        None,
    );
    assert_eq!(
        (status, &none["schedules"]),
        (200, &json!([])),
        "nothing was created"
    );

    let (status, created) = post(
        &server,
        "/v1/schedules",
        schedule("s", "none", vec![task("30s")]),
    );
    assert_eq!(status, 201, "{created}");
    assert!(server.stop().success());
    // The operator lowers the maximum below the plan's timeout.
    let server = node(data.path(), |command| {
        command.args(["--max-timeout", "10s"]);
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let failed = loop {
        let view = server.call("GET", "/v1/schedules/s", None);
        if let Some(tick) = view["ticks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["result"] == "failed")
        {
            break tick.clone();
        }
        assert!(Instant::now() < deadline, "no tick failed: {view}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let detail = failed["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("the plan opens no batch: task 0: field `limits`:")
            && detail.contains("timeout"),
        "{detail}"
    );
    assert_eq!(failed["batch"], Value::Null);
    let (status, refused) = call(
        "POST",
        &format!("{}/v1/schedules/s/run", server.server.url),
        Some(TOKEN),
        None,
    );
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["detail"]
            .as_str()
            .unwrap()
            .contains("field `limits`"),
        "{refused}"
    );
    assert!(server.stop().success());
}

/// A schedule whose plan names a module by a name keeps firing when the same component is
/// added again under a second name: names are aliases, and the second takes nothing away.
#[test]
fn a_schedule_naming_a_module_still_fires_once_it_has_a_second_name() {
    let data = tempfile::tempdir().unwrap();
    let node = node(data.path(), |_| {});
    node.upload("echo");
    create_every_second(&node);
    let bytes = std::fs::read(qhost_tests::guest("echo")).unwrap();
    let added = ureq::post(format!("{}/v1/modules?name=echo2", node.server.url))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .send(&bytes[..])
        .unwrap();
    assert_eq!(added.status().as_u16(), 201, "adding echo as echo2");
    let named = now_micros();
    let ticks = ticks_until(&node, named + SECOND, named + 3 * SECOND);
    assert!(!ticks.is_empty(), "no tick fell due after the second name");
    for tick in &ticks {
        assert_eq!(
            tick["result"], "fired",
            "a tick after `echo` got the name `echo2` too: {tick}"
        );
    }
    for name in ["echo", "echo2"] {
        let (batch, _) = node.submit_batch(vec![json!({"module": name, "input": "x"})]);
        let progress = node.wait(batch, Duration::from_secs(30));
        assert_eq!(
            progress["succeeded"], 1,
            "a task submitted to `{name}`: {progress}"
        );
    }
    assert!(node.stop().success());
}
