//! The command line as a script uses it: an exit code for each kind of failure (listed in
//! `--help` and the README), `--json` on commands that write, times in JSON as RFC 3339
//! beside the microseconds and in text as how long ago, counts with their nouns,
//! `qhost log` reading a handle's batch without being told, and `task output --json`
//! giving bytes as text or base64.

use std::process::Output;

use qhost_tests::server::{Server, bare_cli};
use serde_json::{Value, json};

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Asserts the exit code, showing what the command said otherwise.
fn expect_code(output: &Output, code: i32, what: &str) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "{what}\nstdout: {}\nstderr: {}",
        stdout(output),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The JSON a command printed, which must exit 0.
fn json_of(server: &Server, args: &[&str]) -> Value {
    let output = server.run(args);
    expect_code(&output, 0, &args.join(" "));
    serde_json::from_str(&stdout(&output))
        .unwrap_or_else(|e| panic!("{}: {e}: {}", args.join(" "), stdout(&output)))
}

/// What the README and `--help` say each code is for: each code on a line of its own.
const CODES: [(i32, &str); 8] = [
    (0, "done"),
    (1, "task"),
    (2, "usage"),
    (3, "not found"),
    (4, "refused"),
    (5, "conflict"),
    (6, "unreachable"),
    (7, "server"),
];

#[test]
fn each_kind_of_failure_exits_with_its_own_code() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    server.upload("misbehave");
    let ok = json_of(
        &server,
        &[
            "submit",
            "--module",
            "misbehave",
            "--input",
            "ok",
            "--wait",
            "--json",
        ],
    );
    let done = ok["id"].as_i64().unwrap().to_string();

    let cases: [(&[&str], i32, &str); 7] = [
        (
            &["task", "show", "not-a-number"],
            2,
            "usage: a bad argument",
        ),
        (
            &["task", "cancel", "--state", "gone"],
            2,
            "usage: the server refuses the filter",
        ),
        (&["task", "show", "999999"], 3, "not found: no such task"),
        (&["module", "rm", "nothing"], 3, "not found: no such module"),
        (
            &["task", "show", &done, "--token", "qhb_1_wrong"],
            4,
            "refused: a wrong handle",
        ),
        (
            &["task", "retry", &done],
            5,
            "conflict: a succeeded task retried",
        ),
        (
            &[
                "submit",
                "--module",
                "misbehave",
                "--input",
                "error",
                "--wait",
            ],
            1,
            "a task failed",
        ),
    ];
    for (args, code, what) in cases {
        expect_code(&server.run(args), code, what);
    }
    let unreachable = bare_cli()
        .args(["status", "--server", "http://127.0.0.1:1", "--token", "x"])
        .output()
        .unwrap();
    expect_code(&unreachable, 6, "unreachable: nothing listens there");

    // `--help` and the README list every code.
    let help = stdout(&bare_cli().arg("--help").output().unwrap());
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"),
    )
    .unwrap();
    for (code, word) in CODES {
        assert!(
            help.lines()
                .any(|l| l.trim_start().starts_with(&format!("{code}  ")) && l.contains(word)),
            "--help lists exit code {code} ({word}):\n{help}"
        );
        assert!(
            readme
                .lines()
                .any(|l| l.starts_with(&format!("| {code} |")) && l.contains(word)),
            "the README lists exit code {code} ({word})"
        );
    }
    assert!(server.stop().success());
}

#[test]
fn writes_answer_in_json_with_times_beside_and_text_reads_as_words() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    server.upload("misbehave");
    let opened = server.open_batch(json!({ "max_parallel": 0, "tasks": [
        { "module": "misbehave", "input": "ok" },
        { "module": "misbehave", "input": "ok" },
        { "module": "misbehave", "input": "ok" },
    ] }));
    let batch = opened.id.to_string();
    let [first, second, third] = [0, 1, 2].map(|i| opened.tasks[i].to_string());

    // Writes, in JSON: the server's answer.
    assert_eq!(
        json_of(&server, &["task", "cancel", &first, "--json"])["result"],
        "cancelled"
    );
    assert_eq!(
        json_of(&server, &["task", "priority", &second, "7", "--json"]),
        json!({ "task": opened.tasks[1], "priority": 7 })
    );
    assert_eq!(
        json_of(
            &server,
            &[
                "task", "cancel", "--batch", &batch, "--state", "held", "--json"
            ]
        ),
        json!({ "cancelled": 2, "stopping": 0 })
    );
    assert_eq!(
        json_of(
            &server,
            &["batch", "retry", &batch, "--outcome", "cancelled", "--json"]
        ),
        json!({ "retried": 3 })
    );
    assert_eq!(
        json_of(&server, &["batch", "seal", &batch, "--json"])["batch"],
        opened.id
    );
    assert_eq!(
        json_of(&server, &["batch", "priority", &batch, "3", "--json"])["changed"],
        3
    );
    assert_eq!(
        json_of(&server, &["batch", "cancel", &batch, "--json"])["cancelled"],
        3
    );
    let groups = json_of(&server, &["group", "ls", "--json"]);
    assert_eq!(groups, json!([]), "no group yet");
    json_of(&server, &["group", "limit", "idle", "2", "--json"]);
    assert_eq!(
        json_of(&server, &["group", "ls", "--json"]),
        json!([{ "key": "idle", "limit": 2, "paused": false, "rate": null, "running": 0 }])
    );

    // Times in JSON: the microseconds, and RFC 3339 beside them.
    let view = json_of(&server, &["task", "show", &third, "--json"]);
    let micros = view["submitted_at"].as_i64().unwrap();
    let text = view["submitted_at_rfc3339"].as_str().unwrap();
    assert!(text.ends_with('Z') && text.contains('T'), "{view}");
    let fraction = format!(".{:06}Z", micros % 1_000_000);
    assert!(
        text.ends_with(&fraction),
        "{text} is {micros} to the microsecond"
    );
    assert!(text.starts_with("20"), "{text}");

    // Text: how long ago, counts with their nouns, outcomes in words.
    let show = stdout(&server.run(&["task", "show", &third]));
    assert!(
        show.contains("submitted ") && show.contains(" ago ("),
        "{show}"
    );
    assert!(show.contains("outcome   cancelled"), "{show}");
    let said = stdout(&server.run(&["batch", "retry", &batch, "--outcome", "cancelled"]));
    assert_eq!(said.trim(), format!("batch {batch}: 3 tasks to run again"));
    let said = stdout(&server.run(&["task", "cancel", "--batch", &batch]));
    assert_eq!(said.trim(), "3 tasks cancelled, 0 asked to stop");
    assert!(server.stop().success());
}

#[test]
fn the_log_reads_the_batch_of_the_handle_it_is_given() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    server.upload("misbehave");
    let mine = server.open_batch(json!({ "tasks": [{ "module": "misbehave", "input": "ok" }] }));
    let other = server.open_batch(json!({ "tasks": [{ "module": "misbehave", "input": "ok" }] }));
    for batch in [mine.id, other.id] {
        expect_code(
            &server.run(&["batch", "wait", &batch.to_string()]),
            0,
            "wait",
        );
    }
    let output = server.run(&["log", "--json", "--token", &mine.handle]);
    expect_code(&output, 0, "the log with a handle");
    let batches: Vec<i64> = stdout(&output)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["batch"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(batches, [mine.id], "its batch's attempts, no other's");
    assert!(server.stop().success());
}

#[test]
fn task_output_in_json_gives_its_size_and_bytes_as_text_or_base64() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    server.upload("echo");
    let opened = server.open_batch(json!({ "tasks": [
        { "module": "echo", "input": "héllo" },
        { "module": "echo", "input_base64": "Yf8A" },
    ] }));
    expect_code(
        &server.run(&["batch", "wait", &opened.id.to_string()]),
        0,
        "wait",
    );
    let [text, bytes] = [0, 1].map(|i| opened.tasks[i].to_string());
    assert_eq!(
        json_of(&server, &["task", "output", &text, "--json"]),
        json!({ "task": opened.tasks[0], "size": 6, "output": "héllo" })
    );
    // Not UTF-8: readable text, and the exact bytes in base64 beside it.
    assert_eq!(
        json_of(&server, &["task", "output", &bytes, "--json"]),
        json!({
            "task": opened.tasks[1],
            "size": 3,
            "output": "a\u{fffd}\u{0}",
            "output_base64": "Yf8A",
        })
    );
    // Without --json, the bytes as they are.
    let output = server.run(&["task", "output", &bytes]);
    expect_code(&output, 0, "task output");
    assert_eq!(output.stdout, b"a\xff\x00");
    assert!(server.stop().success());
}
