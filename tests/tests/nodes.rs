//! Three `qhost serve` processes sharing one PostgreSQL database, driven over HTTP:
//! randomized workloads checked over the combined execution log, a node killed mid-run,
//! and nodes whose clocks are seconds off.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

use qhost::runtime::Outcome;
use qhost::store::AttemptRecord;
use qhost_tests::Rng;
use qhost_tests::pg::TestDb;
use qhost_tests::serve_node::ServeNode;
use qhost_tests::workload::{Workload, check_log, submit_workload};
use serde_json::{Value, json};

/// A node named `name` on the database `db`, its clock `skew_ms` off.
fn start(db: &str, name: &str, data: &Path, skew_ms: i64) -> ServeNode {
    ServeNode::start(data, name, 2, |command| {
        command
            .args(["--lease", "3s", "--db", db])
            .env("QHOST_CLOCK_SKEW_MS", skew_ms.to_string());
    })
}

/// How long a batch of these tests may take to end.
const PATIENCE: Duration = Duration::from_secs(120);

#[test]
fn three_nodes_share_the_work_and_keep_every_rule() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for round in 1..=3u64 {
        let db = runtime.block_on(TestDb::new());
        let data = tempfile::tempdir().unwrap();
        let nodes: Vec<ServeNode> = (1..=3)
            .map(|n| start(&db.url, &format!("n{n}"), data.path(), 0))
            .collect();
        nodes[0].upload("misbehave");
        let mut rng = Rng(0xA076_1D64_78BD_642F ^ round);
        let workload = submit_workload(&nodes, &mut rng, 6);
        for (i, &(batch, _)) in workload.batches.iter().enumerate() {
            // Waited on through a node other than the one it was submitted to.
            let progress = nodes[(i + 1) % 3].wait(batch, PATIENCE);
            assert_eq!(progress["running"], 0);
        }
        let log = nodes[2].log();
        let context = format!("round {round}");
        check_log(&log, &workload, 6, &context);
        assert!(
            log.iter().all(|a| a.outcome != Outcome::Lost),
            "{context}: an attempt was lost though no node died"
        );
        let ran_on: HashSet<&str> = log.iter().map(|a| a.node.as_str()).collect();
        assert!(ran_on.len() >= 2, "{context}: only {ran_on:?} ran tasks");
        for node in nodes {
            let status = node.stop();
            assert!(status.success(), "{context}: a node stopped with {status}");
        }
    }
}

#[test]
fn a_killed_nodes_tasks_are_recovered_by_the_others() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDb::new());
    let data = tempfile::tempdir().unwrap();
    let mut nodes: Vec<ServeNode> = (1..=3)
        .map(|n| start(&db.url, &format!("n{n}"), data.path(), 0))
        .collect();
    nodes[0].upload("misbehave");
    let opened = nodes[0].call("POST", "/v1/batches", Some(json!({})));
    let batch = opened["batch"]["id"].as_i64().unwrap();
    let tasks: Vec<Value> = (0..24)
        .map(|i| json!({"module": "misbehave", "input": "sleep:300", "order": i / 8, "max_attempts": 3}))
        .collect();
    nodes[0].call(
        "POST",
        &format!("/v1/batches/{batch}/tasks"),
        Some(json!({"tasks": tasks})),
    );
    // Kill the third node once it runs a task.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let running = nodes[0].call("GET", "/v1/running", None);
        if running
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["node"] == "n3")
        {
            break;
        }
        assert!(Instant::now() < deadline, "n3 never ran a task");
        std::thread::sleep(Duration::from_millis(20));
    }
    nodes[2].kill();

    let progress = nodes[1].wait(batch, PATIENCE);
    assert_eq!(progress["succeeded"], 24, "{progress}");
    let log = nodes[0].log();
    let lost: Vec<&AttemptRecord> = log.iter().filter(|a| a.outcome == Outcome::Lost).collect();
    assert!(
        !lost.is_empty(),
        "no attempt of the killed node was recorded lost"
    );
    assert!(lost.iter().all(|a| a.node == "n3"));
    assert!(
        lost.iter()
            .all(|a| a.error.as_deref().unwrap().contains("stopped renewing"))
    );
    for attempt in &lost {
        assert!(
            log.iter().any(|a| a.task == attempt.task
                && a.outcome == Outcome::Succeeded
                && a.node != "n3"),
            "task {} was not run again by another node",
            attempt.task
        );
    }
    let workload = Workload {
        batches: vec![(batch, None)],
        tasks: log.iter().map(|a| a.task).collect(),
        group_limits: HashMap::new(),
    };
    check_log(&log, &workload, 6, "after the kill");
    for task in &workload.tasks {
        let succeeded = log
            .iter()
            .filter(|a| a.task == *task && a.outcome == Outcome::Succeeded)
            .count();
        assert_eq!(succeeded, 1, "task {task}");
    }
}

#[test]
fn nodes_whose_clocks_are_seconds_off_still_behave() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDb::new());
    let data = tempfile::tempdir().unwrap();
    // Leases last 3 s: uncorrected, the slow node's leases would look expired to the
    // others the moment they were taken, and the fast node would rescue live attempts.
    let nodes: Vec<ServeNode> = [("n1", 0), ("slow", -4000), ("fast", 4000)]
        .iter()
        .map(|&(name, skew)| start(&db.url, name, data.path(), skew))
        .collect();
    nodes[1].upload("misbehave");
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let workload = submit_workload(&nodes, &mut rng, 4);
    for &(batch, _) in &workload.batches {
        nodes[0].wait(batch, PATIENCE);
    }
    let log = nodes[0].log();
    check_log(&log, &workload, 6, "skewed clocks");
    assert!(
        log.iter().all(|a| a.outcome != Outcome::Lost),
        "a live node's attempt was taken for lost"
    );
    let ran_on: HashSet<&str> = log.iter().map(|a| a.node.as_str()).collect();
    assert!(
        ran_on.contains("slow") || ran_on.contains("fast"),
        "only {ran_on:?} ran tasks"
    );
    let registry = nodes[0].call("GET", "/v1/nodes", None);
    let offsets: HashMap<String, i64> = registry
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["node"].as_str().unwrap().to_owned(),
                n["clock_offset"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(offsets.len(), 3, "{registry}");
    // The database's clock minus the node's: about +4 s for the slow one.
    assert!(
        (3_500_000..4_500_000).contains(&offsets["slow"]),
        "{registry}"
    );
    assert!(
        (-4_500_000..-3_500_000).contains(&offsets["fast"]),
        "{registry}"
    );
}

/// A batch's event stream on one node announces the starts of its tasks on other nodes
/// as they happen, not only when something of the batch ends. Two nodes of one slot: a
/// long task of one batch fills one node's slot; a task of a second batch can then start
/// only on the other node, and the first node's stream of that batch names it started.
#[test]
fn a_stream_announces_starts_on_other_nodes_at_once() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDb::new());
    let data = tempfile::tempdir().unwrap();
    let nodes = ServeNode::on_database(&db.url, data.path(), &["n1", "n2"], 1);
    nodes[0].upload("misbehave");
    let long = || {
        json!({ "tasks": [
            { "module": "misbehave", "input": "sleep:20000", "max_attempts": 1 },
        ]})
    };
    let first = nodes[0].call("POST", "/v1/batches", Some(long()));
    let busy = running_on(&nodes[0], first["tasks"][0].as_i64().unwrap());
    let (busy, free) = if busy == "n1" { (0, 1) } else { (1, 0) };

    let mut held = long();
    held["max_parallel"] = json!(0);
    let second = nodes[busy].call("POST", "/v1/batches", Some(held));
    let batch = second["batch"]["id"].as_i64().unwrap();
    let task = second["tasks"][0].as_i64().unwrap();
    let (status, mut events) = nodes[busy].server.events(batch, None);
    assert!(status.contains(" 200 "), "{status}");
    nodes[busy].call(
        "PUT",
        &format!("/v1/batches/{batch}/max_parallel"),
        Some(json!({ "max_parallel": null })),
    );
    let event = events.next().map(|(name, _, task)| (name, task));
    assert_eq!(
        event,
        Some(("started".to_owned(), Some(task))),
        "the task's start on {} should be announced on {} while it runs",
        nodes[free].name,
        nodes[busy].name
    );
    assert_eq!(running_on(&nodes[busy], task), nodes[free].name);
    for opened in [first, second] {
        let batch = opened["batch"]["id"].as_i64().unwrap();
        nodes[0].call("POST", &format!("/v1/batches/{batch}/cancel"), None);
        nodes[0].wait(batch, PATIENCE);
    }
}

/// The node `task` runs on, once it runs, as `node` reads the running list.
fn running_on(node: &ServeNode, task: i64) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let running = node.call("GET", "/v1/running", None);
        if let Some(run) = running
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["task"] == task)
        {
            return run["node"].as_str().unwrap().to_owned();
        }
        assert!(Instant::now() < deadline, "task {task} never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A released batch's handle opens nothing on any node from the moment the release is
/// answered, though another node had checked it, and remembered it, before.
#[test]
fn a_released_batchs_handle_is_refused_on_every_node_at_once() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDb::new());
    let data = tempfile::tempdir().unwrap();
    let nodes: Vec<ServeNode> = (1..=2)
        .map(|n| start(&db.url, &format!("n{n}"), data.path(), 0))
        .collect();
    nodes[0].upload("echo");
    let task = json!({"tasks": [{"module": "echo", "input": "x"}]});
    for round in 0..5 {
        let opened = nodes[0].call("POST", "/v1/batches", Some(json!({})));
        let batch = opened["batch"]["id"].as_i64().unwrap();
        let handle = opened["handle"].as_str().unwrap();
        let path = format!("/v1/batches/{batch}");
        nodes[1].call_as(handle, "GET", &path, None);
        nodes[0].call_as(handle, "DELETE", &path, None);
        let url = format!("{}{path}", nodes[1].server.url);
        let (status, body) = qhost_tests::server::call("GET", &url, Some(handle), None);
        assert_eq!(
            status, 403,
            "round {round}: the other node still took it: {body}"
        );
        // A submission trusts the handle it checked before, and finds the batch gone.
        let (status, body) = qhost_tests::server::call(
            "POST",
            &format!("{url}/tasks"),
            Some(handle),
            Some(task.clone()),
        );
        assert_eq!(
            status, 403,
            "round {round}: the other node still took a submission: {body}"
        );
    }
    for node in nodes {
        assert!(node.stop().success());
    }
}
