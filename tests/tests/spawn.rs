//! Children submitted by running tasks, through real servers (SQLite): a reducer that fans
//! out mappers and merges their outputs (the `mapreduce` example), a parent that waits on
//! its children without holding a slot, a crash mid-fan-out that neither loses nor doubles
//! children, and hostile parents (the `spawner` guest) whose every overreach is refused,
//! logged, and slows nothing else.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use qhost::runtime::Outcome;
use qhost::store::AttemptRecord;
use qhost_tests::serve_node::{ServeNode, TOKEN};
use qhost_tests::server::call;
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(120);

fn node(data: &Path, workers: usize) -> ServeNode {
    let node = ServeNode::start(data, "n1", workers, |_| {});
    node.upload("mapreduce");
    node.upload("spawner");
    node
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

#[test]
fn a_reducer_fans_out_mappers_on_its_own_slot_and_merges_their_counts() {
    let data = tempfile::tempdir().unwrap();
    // One slot: were the suspended reducer to hold it, no mapper could ever run.
    let node = node(data.path(), 1);
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

#[test]
fn a_parent_waiting_on_its_child_holds_no_slot() {
    let data = tempfile::tempdir().unwrap();
    let node = node(data.path(), 2);
    let (batch, ids) = node.submit_batch(vec![json!({"module": "spawner", "input": "wait:2000"})]);
    let running = || -> Vec<i64> {
        let list = node.call("GET", "/v1/running", None);
        list.as_array()
            .unwrap()
            .iter()
            .map(|r| r["task"].as_i64().unwrap())
            .collect()
    };
    // The child sleeps 2 s: meanwhile its parent waits, and only the child runs.
    eventually("the parent waiting", || {
        let parent = node.call("GET", &format!("/v1/tasks/{}", ids[0]), None);
        parent["state"] == "waiting"
    });
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

#[test]
fn a_parent_that_crashes_mid_fan_out_gets_its_children_back_not_new_ones() {
    let data = tempfile::tempdir().unwrap();
    let node = node(data.path(), 2);
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

#[test]
fn hostile_parents_are_refused_and_slow_nothing_else() {
    let data = tempfile::tempdir().unwrap();
    let node = node(data.path(), 2);
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

#[test]
fn a_batch_quota_on_tasks_bounds_its_children() {
    let data = tempfile::tempdir().unwrap();
    let node = node(data.path(), 2);
    let opened = node.call("POST", "/v1/batches", Some(json!({"quotas": {"tasks": 4}})));
    let batch = opened["batch"]["id"].as_i64().unwrap();
    let submitted = node.call(
        "POST",
        &format!("/v1/batches/{batch}/tasks"),
        Some(json!({"tasks": [{"module": "spawner", "input": "many:10"}]})),
    );
    let parent = submitted["tasks"][0].as_i64().unwrap();
    node.wait(batch, PATIENCE);
    let said = output(&node, parent);
    assert!(
        said.starts_with("spawned 3; refused: ") && said.contains("`tasks` quota"),
        "{said}"
    );
    assert!(node.stop().success());
}
