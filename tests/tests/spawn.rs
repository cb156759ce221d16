//! Children submitted by running tasks, through real servers, each test on SQLite and on
//! PostgreSQL: a reducer that fans out mappers and merges their outputs (the `mapreduce`
//! example), a fan-out of 10,000 children (over two nodes on PostgreSQL), a parent that
//! waits on its children without holding a slot, a crash and a kill -9 mid-fan-out that
//! neither lose nor double children, and hostile parents (the `spawner` guest) whose every
//! overreach is refused, logged, and slows nothing else.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use qhost::runtime::Outcome;
use qhost::store::AttemptRecord;
use qhost_tests::serve_node::{ServeNode, TOKEN};
use qhost_tests::server::call;
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(120);

/// Node `n1` with `workers` slots, on the PostgreSQL database `db`, or on SQLite under
/// `data` when none, with the `mapreduce` and `spawner` guests.
fn node(data: &Path, workers: usize, db: Option<&str>) -> ServeNode {
    let node = named(data, "n1", workers, db);
    node.upload("mapreduce");
    node.upload("spawner");
    node
}

fn named(data: &Path, name: &str, workers: usize, db: Option<&str>) -> ServeNode {
    ServeNode::start(data, name, workers, |command| {
        if let Some(db) = db {
            command.args(["--db", db]);
        }
    })
}

/// Opens a batch with `quotas` and submits `task` into it; returns both ids.
fn submit_with_quotas(node: &ServeNode, quotas: Value, task: Value) -> (i64, i64) {
    let opened = node.call("POST", "/v1/batches", Some(json!({ "quotas": quotas })));
    let batch = opened["batch"]["id"].as_i64().unwrap();
    let submitted = node.call(
        "POST",
        &format!("/v1/batches/{batch}/tasks"),
        Some(json!({ "tasks": [task] })),
    );
    (batch, submitted["tasks"][0].as_i64().unwrap())
}

/// How many tasks `batch` holds now.
fn tasks_in(node: &ServeNode, batch: i64) -> u64 {
    let info = node.call("GET", &format!("/v1/batches/{batch}"), None);
    info["progress"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum()
}

fn output(node: &ServeNode, task: i64) -> String {
    let url = format!("{}/v1/tasks/{task}/output", node.server.url);
    let (status, body) = call("GET", &url, Some(TOKEN), None);
    assert_eq!(status, 200, "the output of task {task}: {body}");
    body.as_str()
        .map_or_else(|| body.to_string(), str::to_owned)
}

fn attempts_of(log: &[AttemptRecord], task: i64) -> Vec<&AttemptRecord> {
    let mut of: Vec<&AttemptRecord> = log.iter().filter(|a| a.task == task).collect();
    of.sort_by_key(|a| a.attempt);
    of
}

fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check() {
        assert!(
            Instant::now() < deadline,
            "{what} did not happen in a minute"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn a_reducer_fans_out_mappers_on_its_own_slot_and_merges_their_counts(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    // One slot: were the suspended reducer to hold it, no mapper could ever run.
    let node = node(data.path(), 1, db);
    let text = "the cat sat\n\nthe dog sat down\nA cat, a dog; THE end";
    let (batch, ids) = node.submit_batch(vec![json!({"module": "mapreduce", "input": text})]);
    let progress = node.wait(batch, PATIENCE);
    assert_eq!(
        progress["succeeded"], 4,
        "the reducer and 3 mappers: {progress}"
    );
    assert_eq!(
        output(&node, ids[0]),
        "the 3\na 2\ncat 2\ndog 2\nsat 2\ndown 1\nend 1\nparts 3\n"
    );
    let log: Vec<AttemptRecord> = node
        .log()
        .into_iter()
        .filter(|a| a.batch == batch)
        .collect();
    let reducer = attempts_of(&log, ids[0]);
    let outcomes: Vec<Outcome> = reducer.iter().map(|a| a.outcome).collect();
    assert_eq!(outcomes, [Outcome::Suspended, Outcome::Succeeded]);
    // Every mapper ran after the reducer gave its slot back, and before it ran again.
    let mappers: Vec<&AttemptRecord> = log.iter().filter(|a| a.task != ids[0]).collect();
    assert_eq!(mappers.len(), 3, "one attempt per mapper");
    for mapper in mappers {
        assert_eq!(mapper.outcome, Outcome::Succeeded);
        assert!(
            mapper.started_at >= reducer[0].ended_at && mapper.ended_at <= reducer[1].started_at,
            "mapper {} ran from {} to {}, the reducer suspended at {} and ran again at {}",
            mapper.task,
            mapper.started_at,
            mapper.ended_at,
            reducer[0].ended_at,
            reducer[1].started_at
        );
    }
    let info = node.call("GET", &format!("/v1/tasks/{}", ids[0]), None);
    assert_eq!(info["attempts"], 2, "{info}");
    assert!(node.stop().success());
}

fn a_parent_waiting_on_its_child_holds_no_slot(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let node = node(data.path(), 2, db);
    let (batch, ids) = node.submit_batch(vec![json!({"module": "spawner", "input": "wait:2000"})]);
    let running = || -> Vec<i64> {
        let list = node.call("GET", "/v1/running", None);
        list.as_array()
            .unwrap()
            .iter()
            .map(|r| r["task"].as_i64().unwrap())
            .collect()
    };
    // The child sleeps 2 s: meanwhile its parent waits, and only the child runs. The child
    // starts after its parent's suspension is written, so wait for it to run.
    eventually("the parent waiting", || {
        let parent = node.call("GET", &format!("/v1/tasks/{}", ids[0]), None);
        parent["state"] == "waiting"
    });
    eventually("the child running", || !running().is_empty());
    let now = running();
    assert_eq!(now.len(), 1, "only the child runs: {now:?}");
    assert_ne!(now[0], ids[0], "the parent holds no slot");
    node.wait(batch, PATIENCE);
    assert_eq!(output(&node, ids[0]), "done");
    // The log says the same: the parent's first attempt ended suspended before its child
    // ended, and its second began after.
    let log = node.log();
    let parent = attempts_of(&log, ids[0]);
    let child = log
        .iter()
        .find(|a| a.batch == batch && a.task != ids[0])
        .unwrap();
    assert_eq!(parent[0].outcome, Outcome::Suspended);
    assert!(parent[0].ended_at <= child.ended_at && parent[1].started_at >= child.ended_at);
    assert!(node.stop().success());
}

fn a_parent_that_crashes_mid_fan_out_gets_its_children_back_not_new_ones(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let node = node(data.path(), 2, db);
    let (batch, ids) = node.submit_batch(vec![json!({
        "module": "spawner", "input": "crash", "max_attempts": 2, "backoff": "0s"
    })]);
    let progress = node.wait(batch, PATIENCE);
    assert_eq!(
        progress["succeeded"], 4,
        "the parent and 3 children: {progress}"
    );
    assert_eq!(output(&node, ids[0]), "read 3");
    let log = node.log();
    let outcomes: Vec<Outcome> = attempts_of(&log, ids[0])
        .iter()
        .map(|a| a.outcome)
        .collect();
    // Its suspension is not charged: 2 attempts allowed, 3 made.
    assert_eq!(
        outcomes,
        [Outcome::Trap, Outcome::Suspended, Outcome::Succeeded]
    );
    assert!(node.stop().success());
}

fn hostile_parents_are_refused_and_slow_nothing_else(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let node = node(data.path(), 2, db);
    let (other_batch, other) = node.submit_batch(vec![json!({"module": "spawner", "input": "ok"})]);
    node.wait(other_batch, PATIENCE);
    let stranger = other[0];
    let commands = [
        "priority:5".to_string(),
        "group:someone-else".into(),
        "mount:data".into(),
        format!("memory:{}", 1u64 << 40),
        format!("after:{stranger}"),
        format!("output:{stranger}"),
        "loop".into(),
        "twice".into(),
    ];
    let tasks: Vec<Value> = commands
        .iter()
        .map(|c| json!({"module": "spawner", "input": c, "priority": 0, "max_attempts": 1}))
        .collect();
    let (batch, ids) = node.submit_batch(tasks);
    let started = Instant::now();
    let progress = node.wait(batch, PATIENCE);
    assert_eq!(progress["failed"], 0, "a refusal fails no task: {progress}");
    let said: HashMap<&str, String> = commands
        .iter()
        .zip(&ids)
        .map(|(c, &id)| (c.split(':').next().unwrap(), output(&node, id)))
        .collect();
    let refused = |command: &str, words: &str| {
        let out = &said[command];
        assert!(
            out.starts_with("refused: ") && out.contains(words),
            "`{command}` said {out:?}, not a refusal with {words:?}"
        );
    };
    refused("priority", "at most its parent's (0)");
    refused("group", "a child's group is its parent's (none) or none");
    refused("mount", "mount `data`, which its parent does not have");
    refused("memory", "at most its parent's");
    refused("after", &format!("task {stranger}, which is not a child"));
    refused(
        "output",
        &format!("task {stranger} is not of this task's batch"),
    );
    let twice: Vec<&str> = said["twice"].split(' ').collect();
    assert_eq!(twice[0], twice[1], "one key, one child: {twice:?}");
    // A loop goes 8 deep, then its deepest task is refused.
    let log = node.log();
    let looped: Vec<&AttemptRecord> = log
        .iter()
        .filter(|a| a.batch == batch && a.logs.iter().any(|l| l.message.contains("depth")))
        .collect();
    assert_eq!(looped.len(), 1, "one task of the loop was refused");
    assert!(
        looped[0].logs[0]
            .message
            .contains("spawn of child `again` refused: task"),
        "{:?}",
        looped[0].logs
    );
    // Every refusal is a line of its attempt's log.
    for (command, &id) in commands.iter().zip(&ids).take(6) {
        let attempt = attempts_of(&log, id)[0];
        assert!(
            attempt.logs.iter().any(|l| l.message.contains("refused")),
            "`{command}`: {:?}",
            attempt.logs
        );
    }
    // The whole hostile batch, loop included, took no longer than a few plain tasks.
    assert!(started.elapsed() < Duration::from_secs(30));
    let (plain, _) = node.submit_batch(vec![json!({"module": "spawner", "input": "ok"}); 4]);
    assert_eq!(node.wait(plain, PATIENCE)["succeeded"], 4);
    assert!(node.stop().success());
}

fn a_batch_quota_on_tasks_bounds_its_children(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let node = node(data.path(), 2, db);
    let (batch, parent) = submit_with_quotas(
        &node,
        json!({"tasks": 4}),
        json!({"module": "spawner", "input": "many:10"}),
    );
    node.wait(batch, PATIENCE);
    let said = output(&node, parent);
    assert!(
        said.starts_with("spawned 3; refused: ") && said.contains("`tasks` quota"),
        "{said}"
    );
    assert!(node.stop().success());
}

/// Waits for `batch`, whose task `parent` ran `fan:{children}`: every task succeeded and
/// the parent summed each child's number once. Returns the batch's execution log.
fn merged(
    node: &ServeNode,
    batch: i64,
    parent: i64,
    children: u64,
    patience: Duration,
) -> Vec<AttemptRecord> {
    let progress = node.wait(batch, patience);
    let log: Vec<AttemptRecord> = node
        .log()
        .into_iter()
        .filter(|a| a.batch == batch)
        .collect();
    assert_eq!(
        progress["succeeded"],
        children + 1,
        "{progress}; the parent's attempts: {:?}",
        attempts_of(&log, parent)
    );
    let sum = children * (children - 1) / 2;
    assert_eq!(output(node, parent), format!("sum {sum} of {children}"));
    log
}

/// A parent fans out 10,000 children (its batch's `children` quota raised to that), gives
/// its slot back, and merges their outputs once they have all ended: every child ran
/// once, on every node.
fn ten_thousand_children_are_merged(db: Option<&str>) {
    const CHILDREN: u64 = 10_000;
    let data = tempfile::tempdir().unwrap();
    let mut nodes = vec![node(data.path(), 2, db)];
    if db.is_some() {
        nodes.push(named(data.path(), "n2", 2, db));
    }
    let first = &nodes[0];
    // Its own time is long: the refusal, not a timeout, ends it however slow the machine.
    let refused = submit_with_quotas(
        first,
        json!({}),
        json!({"module": "spawner", "input": format!("fan:{CHILDREN}"), "max_attempts": 1, "timeout": "10m"}),
    );
    let (batch, parent) = submit_with_quotas(
        first,
        json!({"children": CHILDREN}),
        json!({"module": "spawner", "input": format!("fan:{CHILDREN}"), "timeout": "10m"}),
    );
    // Under the server's default quota, the same fan-out is refused at its 1,001st child.
    first.wait(refused.0, PATIENCE);
    let log = first.log();
    let attempt = attempts_of(&log, refused.1)[0];
    assert_eq!(attempt.outcome, Outcome::GuestError, "{attempt:?}");
    assert!(
        attempt
            .error
            .as_deref()
            .unwrap_or("")
            .contains("`children` quota"),
        "{:?}",
        attempt.error
    );
    assert_eq!(tasks_in(first, refused.0), 1 + 1000);

    let log = merged(first, batch, parent, CHILDREN, Duration::from_secs(600));
    let ran: Vec<(Outcome, Option<&str>)> = attempts_of(&log, parent)
        .iter()
        .map(|a| (a.outcome, a.error.as_deref()))
        .collect();
    assert_eq!(
        ran,
        [(Outcome::Suspended, None), (Outcome::Succeeded, None)],
        "the parent's attempts"
    );
    assert_eq!(
        log.len() as u64,
        CHILDREN + 2,
        "one attempt per child, two of the parent"
    );
    if db.is_some() {
        let ran_on: std::collections::HashSet<&str> = log.iter().map(|a| a.node.as_str()).collect();
        assert_eq!(ran_on.len(), 2, "both nodes ran children: {ran_on:?}");
    }
    for node in nodes {
        assert!(node.stop().success());
    }
}

/// kill -9 of the node while its task fans out: once it starts again, the parent's lost
/// attempt runs again and submits the same keys, which name the children already
/// submitted. Every child exists once and ran once; the merge counts each once.
fn a_kill_during_a_fan_out_loses_and_doubles_no_child(db: Option<&str>) {
    // Enough that the kill lands mid-fan-out (it comes once 10 children exist), few
    // enough that the attempt run again submits them all well within the patience.
    const CHILDREN: u64 = 1_000;
    let data = tempfile::tempdir().unwrap();
    let mut first = node(data.path(), 2, db);
    let (batch, parent) = submit_with_quotas(
        &first,
        json!({"children": CHILDREN}),
        json!({
            "module": "spawner", "input": format!("fan:{CHILDREN}"),
            "max_attempts": 3, "backoff": "0s", "timeout": "10m"
        }),
    );
    let mut seen = 0;
    eventually("the first children", || {
        seen = tasks_in(&first, batch);
        seen > 10
    });
    first.kill();
    assert!(
        seen < CHILDREN + 1,
        "the fan-out had ended before the kill ({seen} tasks): the test proves nothing"
    );
    let second = node(data.path(), 2, db);
    let log = merged(&second, batch, parent, CHILDREN, PATIENCE);
    // The killed attempt is recorded lost, and the task runs again.
    let outcomes: Vec<Outcome> = attempts_of(&log, parent)
        .iter()
        .map(|a| a.outcome)
        .collect();
    assert_eq!(
        outcomes,
        [Outcome::Lost, Outcome::Suspended, Outcome::Succeeded]
    );
    let mut per_child: HashMap<i64, usize> = HashMap::new();
    for a in log.iter().filter(|a| a.task != parent) {
        *per_child.entry(a.task).or_default() += usize::from(a.outcome == Outcome::Succeeded);
    }
    assert_eq!(per_child.len() as u64, CHILDREN, "each key named one child");
    assert!(
        per_child.values().all(|&n| n == 1),
        "a child succeeded twice or never"
    );
    assert!(second.stop().success());
}

qhost_tests::on_each_driver!(
    a_reducer_fans_out_mappers_on_its_own_slot_and_merges_their_counts,
    a_parent_waiting_on_its_child_holds_no_slot,
    a_parent_that_crashes_mid_fan_out_gets_its_children_back_not_new_ones,
    hostile_parents_are_refused_and_slow_nothing_else,
    a_batch_quota_on_tasks_bounds_its_children,
    ten_thousand_children_are_merged,
    a_kill_during_a_fan_out_loses_and_doubles_no_child,
);
