//! Batches as graphs through real servers: a graph of 1,000 tasks (diamonds chained one
//! after another) on SQLite and on two PostgreSQL nodes, every edge held in the execution
//! log; and a fan-in that reads its dependencies' outputs (the `wordsum` guest).

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use qhost::runtime::Outcome;
use qhost::store::AttemptRecord;
use qhost_tests::language_guest;
use qhost_tests::pg::TestDb;
use qhost_tests::serve_node::{ServeNode, TOKEN};
use qhost_tests::server::call;
use serde_json::{Value, json};

/// Diamonds of this width, one after another, from one root: 1 + 111 × (8 + 1) = 1,000
/// tasks.
const WIDTH: usize = 8;
const DIAMONDS: usize = 111;
const PATIENCE: Duration = Duration::from_secs(300);

/// The graph's tasks, as submitted, and its edges as (dependency, dependent) indexes.
fn diamonds() -> (Vec<Value>, Vec<(usize, usize)>) {
    let mut tasks = vec![json!({"module": "echo", "key": "join-0", "input": "root"})];
    let mut edges = Vec::new();
    let mut join = 0;
    for d in 1..=DIAMONDS {
        let first = tasks.len();
        for w in 0..WIDTH {
            edges.push((join, tasks.len()));
            tasks.push(json!({
                "module": "echo",
                "key": format!("side-{d}-{w}"),
                "input": format!("{d}.{w}"),
                "after": [format!("join-{}", d - 1)],
            }));
        }
        let sides: Vec<String> = (0..WIDTH).map(|w| format!("side-{d}-{w}")).collect();
        let next = tasks.len();
        edges.extend((first..next).map(|side| (side, next)));
        tasks.push(json!({
            "module": "echo",
            "key": format!("join-{d}"),
            "input": format!("{d}"),
            "after": sides,
        }));
        join = next;
    }
    assert_eq!(tasks.len(), 1000);
    (tasks, edges)
}

/// Runs the graph through `nodes` (the first takes the submission) and checks that every
/// task succeeded once and that each began only after every task it runs after ended.
fn run_graph(nodes: &[ServeNode]) {
    nodes[0].upload("echo");
    let (tasks, edges) = diamonds();
    let (batch, ids) = nodes[0].submit_batch(tasks);
    let progress = nodes[nodes.len() - 1].wait(batch, PATIENCE);
    assert_eq!(progress["succeeded"], 1000, "{progress}");
    let log: Vec<AttemptRecord> = nodes[0]
        .log()
        .into_iter()
        .filter(|a| a.batch == batch)
        .collect();
    assert_eq!(log.len(), 1000, "one attempt per task");
    assert!(log.iter().all(|a| a.outcome == Outcome::Succeeded));
    let by_task: HashMap<i64, &AttemptRecord> = log.iter().map(|a| (a.task, a)).collect();
    for (dep, dependent) in edges {
        let (before, after) = (by_task[&ids[dep]], by_task[&ids[dependent]]);
        assert!(
            after.started_at >= before.ended_at,
            "task {} started at {} before task {}, which it runs after, ended at {}",
            after.task,
            after.started_at,
            before.task,
            before.ended_at
        );
    }
}

fn node(data: &Path, name: &str, db: Option<&str>) -> ServeNode {
    ServeNode::start(data, name, 4, |command| {
        if let Some(db) = db {
            command.args(["--db", db]);
        }
    })
}

#[test]
fn a_graph_of_a_thousand_tasks_keeps_every_edge_on_sqlite() {
    let data = tempfile::tempdir().unwrap();
    let node = node(data.path(), "n1", None);
    run_graph(std::slice::from_ref(&node));
    assert!(node.stop().success());
}

#[test]
fn a_graph_of_a_thousand_tasks_keeps_every_edge_on_two_postgres_nodes() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDb::new());
    let data = tempfile::tempdir().unwrap();
    let nodes = [
        node(data.path(), "n1", Some(&db.url)),
        node(data.path(), "n2", Some(&db.url)),
    ];
    run_graph(&nodes);
    let log = nodes[0].log();
    let ran_on: std::collections::HashSet<&str> = log.iter().map(|a| a.node.as_str()).collect();
    assert_eq!(ran_on.len(), 2, "both nodes ran tasks: {ran_on:?}");
    for node in nodes {
        assert!(node.stop().success());
    }
}

#[test]
fn a_fan_in_reads_the_outputs_of_the_tasks_it_runs_after() {
    let data = tempfile::tempdir().unwrap();
    let node = node(data.path(), "n1", None);
    for guest in ["wordcount", "wordsum", "misbehave"] {
        node.upload(guest);
    }
    let counts = || {
        vec![
            json!({"module": "wordcount", "key": "first", "input": "one two three"}),
            json!({"module": "wordcount", "key": "second", "input": "four five\nsix"}),
            json!({"module": "misbehave", "key": "broken", "input": "error", "max_attempts": 1}),
        ]
    };
    let output = |id: i64| {
        let url = format!("{}/v1/tasks/{id}/output", node.server.url);
        let (status, body) = call("GET", &url, Some(TOKEN), None);
        assert_eq!(status, 200, "the output of task {id}: {body}");
        body
    };
    // A fan-in runs after every other task of its batch, and sees the one that failed.
    let mut tasks = counts();
    tasks.push(json!({"module": "wordsum", "after": "*", "on_failure": "run"}));
    let (batch, ids) = node.submit_batch(tasks);
    node.wait(batch, PATIENCE);
    assert_eq!(
        output(ids[3]),
        json!({"lines": 1, "words": 6, "bytes": 26, "summed": 2, "failed": 1})
    );
    // Named dependencies; one that failed cancels its dependent (the default).
    let mut tasks = counts();
    tasks.push(json!({"module": "wordsum", "after": ["first", "second"]}));
    tasks.push(json!({"module": "wordsum", "after": ["first", "broken"]}));
    let (batch, ids) = node.submit_batch(tasks);
    let progress = node.wait(batch, PATIENCE);
    assert_eq!(
        (
            &progress["succeeded"],
            &progress["failed"],
            &progress["cancelled"]
        ),
        (&json!(3), &json!(1), &json!(1)),
        "{progress}"
    );
    assert_eq!(
        output(ids[3]),
        json!({"lines": 1, "words": 6, "bytes": 26, "summed": 2, "failed": 0})
    );
    let cancelled = node.call("GET", &format!("/v1/tasks/{}", ids[4]), None);
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");
    assert!(node.stop().success());
}

#[test]
fn the_python_fan_in_sums_as_the_rust_one_does() {
    let data = tempfile::tempdir().unwrap();
    let node = node(data.path(), "n1", None);
    node.upload("wordcount");
    node.upload("misbehave");
    node.upload_as("wordsum-python", &language_guest("wordsum-python"));
    let (batch, ids) = node.submit_batch(vec![
        json!({"module": "wordcount", "key": "first", "input": "one two three"}),
        json!({"module": "wordcount", "key": "second", "input": "four five\nsix"}),
        json!({"module": "misbehave", "key": "broken", "input": "error", "max_attempts": 1}),
        json!({"module": "wordsum-python", "after": "*", "on_failure": "run"}),
    ]);
    node.wait(batch, PATIENCE);
    let url = format!("{}/v1/tasks/{}/output", node.server.url, ids[3]);
    let (status, body) = call("GET", &url, Some(TOKEN), None);
    assert_eq!(status, 200, "the Python fan-in's output: {body}");
    // Byte for byte the Rust wordsum's answer to the same batch (the test above).
    assert_eq!(
        body,
        json!({"lines": 1, "words": 6, "bytes": 26, "summed": 2, "failed": 1})
    );
    assert!(node.stop().success());
}
