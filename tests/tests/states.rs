//! One word per state, through a real `qhost serve`: a delayed, a gated, a paused, a ready
//! and a running task, each read in every view a person reads it in (its row and the
//! counts under it, the state filter, the task view, its batch's progress, `status`,
//! `/metrics`, and the command line's `task ls`, `task show` and `status`), say the
//! same word. The dashboard reads these same API answers.

use std::collections::BTreeMap;
use std::process::Output;
use std::time::{Duration, Instant};

use qhost_tests::server::{Server, agent, call};
use serde_json::{Value, json};

/// Every state, in the order the server lists them.
const STATES: [&str; 8] = [
    "waiting",
    "ready",
    "held",
    "reserved",
    "running",
    "succeeded",
    "failed",
    "cancelled",
];

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn get(server: &Server, path: &str) -> Value {
    let (status, body) = call(
        "GET",
        &format!("{}{path}", server.url),
        Some(&server.token),
        None,
    );
    assert_eq!(status, 200, "GET {path}: {body}");
    body
}

/// How many of `words` are each state, every state named.
fn counted<'a>(words: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, u64> {
    let mut counts: BTreeMap<String, u64> = STATES.iter().map(|s| (s.to_string(), 0)).collect();
    for word in words {
        *counts.get_mut(word).expect("a state") += 1;
    }
    counts
}

/// A JSON object of counts per state, as a map.
fn counts_of(object: &Value) -> BTreeMap<String, u64> {
    STATES
        .iter()
        .map(|s| (s.to_string(), object[*s].as_u64().expect(s)))
        .collect()
}

/// The counts as the command line prints them: `1 waiting, 0 ready, ...`.
fn counts_line(counts: &BTreeMap<String, u64>) -> String {
    STATES
        .iter()
        .map(|s| format!("{} {s}", counts[*s]))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One task of the test: its id, batch, the word every view must show, and the start of
/// what `task show` says it waits on.
struct Case {
    what: &'static str,
    id: i64,
    batch: i64,
    word: &'static str,
    waits_on: Option<&'static str>,
}

#[test]
fn every_view_shows_a_task_in_the_same_state() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    server.upload("sleep");
    server.upload("echo");
    let (status, group) = call(
        "PUT",
        &format!("{}/v1/groups/g", server.url),
        Some(&server.token),
        Some(json!({ "limit": 1 })),
    );
    assert_eq!(status, 200, "{group}");

    // Running: the only slot, and all its group "g" may run.
    let running = server.open_batch(json!({
        "tasks": [{"module": "sleep", "input": "120000", "group": "g"}],
    }));
    let deadline = Instant::now() + Duration::from_secs(60);
    while get(&server, &format!("/v1/tasks/{}", running.tasks[0]))["state"] != "running" {
        assert!(Instant::now() < deadline, "the sleep task never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Ready: due, in a group at its limit (claimed as soon as it has room).
    let ready = server.open_batch(json!({
        "tasks": [{"module": "echo", "input": "r", "group": "g"}],
    }));
    // Delayed, and gated behind it.
    let delayed = server.open_batch(json!({
        "tasks": [
            {"module": "echo", "input": "d", "delay": "1h"},
            {"module": "echo", "input": "o", "order": 1},
        ],
    }));
    // Paused.
    let paused = server.open_batch(json!({
        "tasks": [{"module": "echo", "input": "p", "order": 0}],
    }));
    let (status, body) = call(
        "POST",
        &format!("{}/v1/batches/{}/pause", server.url, paused.id),
        Some(&server.token),
        None,
    );
    assert_eq!(status, 200, "{body}");

    let cases = [
        Case {
            what: "running",
            id: running.tasks[0],
            batch: running.id,
            word: "running",
            waits_on: None,
        },
        Case {
            what: "ready, its group full",
            id: ready.tasks[0],
            batch: ready.id,
            word: "ready",
            waits_on: Some("group g: 1 of 1 running"),
        },
        Case {
            what: "delayed",
            id: delayed.tasks[0],
            batch: delayed.id,
            word: "waiting",
            waits_on: Some("delayed, due in "),
        },
        Case {
            what: "gated",
            id: delayed.tasks[1],
            batch: delayed.id,
            word: "waiting",
            waits_on: Some("gate: order 0 has 1 open"),
        },
        Case {
            what: "paused",
            id: paused.tasks[0],
            batch: paused.id,
            word: "held",
            waits_on: Some("batch paused"),
        },
    ];

    for case in &cases {
        let what = case.what;
        let batch_words = cases
            .iter()
            .filter(|c| c.batch == case.batch)
            .map(|c| c.word);
        let batch_counts = counted(batch_words);

        // The row, and the counts under it.
        let page = get(&server, &format!("/v1/tasks?batch={}", case.batch));
        let row = page["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == case.id)
            .unwrap_or_else(|| panic!("{what}: no row in {page}"));
        assert_eq!(row["state"], case.word, "{what}: its row");
        assert_eq!(
            counts_of(&page["counts"]),
            batch_counts,
            "{what}: the counts"
        );
        let ls = stdout(&server.run(&["task", "ls", "--batch", &case.batch.to_string()]));
        let shown = ls
            .lines()
            .find(|line| line.split_whitespace().next() == Some(&case.id.to_string()))
            .unwrap_or_else(|| panic!("{what}: no row in {ls}"));
        assert_eq!(
            shown.split_whitespace().nth(2),
            Some(case.word),
            "{what}: `task ls`: {ls}"
        );
        assert!(
            ls.contains(&counts_line(&batch_counts)),
            "{what}: `task ls` counts: {ls}"
        );

        // The filter: listed under its word, and under no other.
        for state in STATES {
            let page = get(
                &server,
                &format!("/v1/tasks?batch={}&state={state}", case.batch),
            );
            let listed = page["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["id"] == case.id);
            assert_eq!(listed, state == case.word, "{what}: ?state={state}");
        }
        let filtered = stdout(&server.run(&[
            "task",
            "ls",
            "--batch",
            &case.batch.to_string(),
            "--state",
            case.word,
        ]));
        assert!(
            filtered
                .lines()
                .any(|line| line.split_whitespace().next() == Some(&case.id.to_string())),
            "{what}: `task ls --state {}`: {filtered}",
            case.word
        );

        // The task view, with what it waits on.
        let view = get(&server, &format!("/v1/tasks/{}", case.id));
        assert_eq!(view["state"], case.word, "{what}: the task view");
        assert_eq!(
            view["waiting_on"].is_null(),
            case.waits_on.is_none(),
            "{what}: {view}"
        );
        let text = stdout(&server.run(&["task", "show", &case.id.to_string()]));
        assert!(
            text.contains(&format!("  state     {}\n", case.word)),
            "{what}: `task show`: {text}"
        );
        match case.waits_on {
            Some(on) => assert!(
                text.contains(&format!("  waits on  {on}")),
                "{what}: `task show` says what it waits on: {text}"
            ),
            None => assert!(!text.contains("waits on"), "{what}: {text}"),
        }
        let json: Value = serde_json::from_str(&stdout(&server.run(&[
            "task",
            "show",
            "--json",
            &case.id.to_string(),
        ])))
        .unwrap();
        assert_eq!(json["state"], case.word, "{what}: `task show --json`");
        // The CLI adds each time's RFC 3339 form beside it; the rest is the API's.
        let mut waiting_on = json["waiting_on"].clone();
        if let Some(fields) = waiting_on.as_object_mut() {
            fields.retain(|key, _| !key.ends_with("_rfc3339"));
        }
        assert_eq!(waiting_on, view["waiting_on"], "{what}: --json");

        // Its batch's progress, as the dashboard's batch page reads it.
        let batch = get(&server, &format!("/v1/batches/{}", case.batch));
        assert_eq!(
            counts_of(&batch["progress"]),
            batch_counts,
            "{what}: its batch's progress"
        );
    }

    // The whole queue: `status`, its command and `/metrics` count the same words.
    let totals = counted(cases.iter().map(|c| c.word));
    let status = get(&server, "/v1/status");
    assert_eq!(counts_of(&status["tasks"]), totals, "status: {status}");
    assert!(
        status["oldest_ready_age_seconds"].is_number(),
        "a ready task is there to claim: {status}"
    );
    let printed = stdout(&server.run(&["status"]));
    assert!(
        printed.contains(&format!("tasks     {}\n", counts_line(&totals))),
        "`qhost status`: {printed}"
    );
    let mut response = agent()
        .get(format!("{}/metrics", server.url))
        .header("Authorization", format!("Bearer {}", server.token))
        .call()
        .unwrap();
    let metrics = response.body_mut().read_to_string().unwrap();
    for (state, count) in &totals {
        let line = format!("qhost_tasks{{state=\"{state}\"}} {count}\n");
        assert!(metrics.contains(&line), "/metrics lacks {line}: {metrics}");
    }
}
