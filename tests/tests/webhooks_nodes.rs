//! Webhooks on two nodes sharing one PostgreSQL database: both send from the same outbox,
//! racing for each event, and every event (a batch's end, a task's final failure; to the
//! batch's webhook and the server's) is delivered once, whichever node takes it, also
//! when its first tries fail and another node may take the retry.

use std::collections::{BTreeMap, BTreeSet};

use qhost_tests::hook_receiver::{HookReceiver, Received};
use qhost_tests::pg::TestDb;
use qhost_tests::serve_node::ServeNode;
use serde_json::json;

const SECRET: &str = "a-batch-secret-of-some-length";
const SERVER_SECRET: &str = "the-server-secret-0123456789";
/// Batches opened, alternately on each node.
const BATCHES: usize = 24;

/// Each event's deliveries (answered 200) by its id, and each event's kind and batch.
fn delivered(received: &[Received]) -> BTreeMap<i64, (usize, String, i64)> {
    let mut events = BTreeMap::new();
    for request in received.iter().filter(|r| r.status == 200) {
        let body = request.json();
        let id = body["id"].as_i64().expect("an event id");
        let kind = body["type"].as_str().unwrap().to_owned();
        let batch = body["batch_id"].as_i64().unwrap();
        events.entry(id).or_insert((0, kind, batch)).0 += 1;
    }
    events
}

#[test]
fn two_nodes_deliver_each_event_once() {
    let db = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(TestDb::new());
    // The first tries fail: their retries are up for either node.
    let hook = HookReceiver::start(3);
    let server_hook = HookReceiver::start(3);
    let data = tempfile::tempdir().unwrap();
    let secret_file = data.path().join("webhook-secret");
    std::fs::write(&secret_file, format!("{SERVER_SECRET}\n")).unwrap();
    // One key for both, as nodes sharing a store must have: a batch's webhook secret is
    // sealed by the node that opened it and opened by the node that sends.
    let key_file = data.path().join("secret-key");
    std::fs::write(&key_file, "ab".repeat(32)).unwrap();
    let nodes: Vec<ServeNode> = ["n1", "n2"]
        .iter()
        .map(|name| {
            ServeNode::start(data.path(), name, 2, |command| {
                command
                    .args(["--db", &db.url])
                    .args(["--allow-http", &hook.origin()])
                    .args(["--allow-http", &server_hook.origin()])
                    .args(["--webhook", &server_hook.url("/all")])
                    .arg("--webhook-secret-file")
                    .arg(&secret_file)
                    .arg("--secret-key-file")
                    .arg(&key_file);
            })
        })
        .collect();
    nodes[0].upload("misbehave");

    // Every batch has one task that fails for good and one that succeeds: two events
    // each, to both webhooks.
    let mut batches = BTreeSet::new();
    for i in 0..BATCHES {
        let node = &nodes[i % 2];
        let opened = node.call(
            "POST",
            "/v1/batches",
            Some(json!({
                "webhook": {"url": hook.url("/hook"), "secret": SECRET},
                "tasks": [
                    {"module": "misbehave", "input": "error", "max_attempts": 1},
                    {"module": "misbehave", "input": "ok"},
                ],
            })),
        );
        batches.insert(opened["batch"]["id"].as_i64().unwrap());
    }
    let expected = 2 * BATCHES;
    for receiver in [&hook, &server_hook] {
        // Each delivered event answered 200 once; the failed tries came before.
        let mut got = receiver.wait_for(expected + 3);
        while got.iter().filter(|r| r.status == 200).count() < expected {
            got = receiver.wait_for(got.len() + 1);
        }
    }
    // Stopped, neither node sends any more: what came is all that ever comes.
    for node in nodes {
        assert!(node.stop().success());
    }
    for (receiver, name) in [
        (&hook, "the batches' webhook"),
        (&server_hook, "the server's"),
    ] {
        let events = delivered(&receiver.received());
        let twice: Vec<_> = events.iter().filter(|(_, (n, _, _))| *n > 1).collect();
        assert!(
            twice.is_empty(),
            "{name}: delivered more than once: {twice:?}"
        );
        assert_eq!(events.len(), expected, "{name}: {events:?}");
        for batch in &batches {
            let kinds: BTreeSet<&str> = events
                .values()
                .filter(|(_, _, b)| b == batch)
                .map(|(_, kind, _)| kind.as_str())
                .collect();
            assert_eq!(
                kinds,
                BTreeSet::from(["batch.ended", "task.failed"]),
                "{name}: batch {batch}"
            );
        }
    }
}
