//! Operating on work already submitted, end to end against a real `qhost serve`: failed
//! tasks driven again once what failed them is fixed, batches and groups paused and
//! resumed, and openings and submissions done exactly once, over the API and from the
//! command line, including a request whose answer is lost on the way.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use qhost_tests::server::{Server, agent, call};
use serde_json::{Value, json};

/// A request with an `Idempotency-Key`: the status, the `Idempotent-Replayed` header, the
/// JSON body.
fn keyed(url: &str, token: &str, key: &str, body: &Value) -> (u16, bool, Value) {
    let mut response = agent()
        .post(url)
        .header("Authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .header("Idempotency-Key", key)
        .send(body.to_string())
        .unwrap();
    let replayed = response.headers().get("idempotent-replayed").is_some();
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap();
    (status, replayed, serde_json::from_str(&text).unwrap())
}

/// Waits (long-polling) until every task of the batch has ended; returns its progress.
fn wait(server: &Server, batch: i64) -> Value {
    loop {
        let (status, info) = call(
            "GET",
            &format!("{}/v1/batches/{batch}/wait?timeout=30s", server.url),
            Some(&server.token),
            None,
        );
        assert_eq!(status, 200, "{info}");
        let p = &info["progress"];
        let open: u64 = ["waiting", "ready", "held", "reserved", "running"]
            .iter()
            .map(|s| p[*s].as_u64().unwrap())
            .sum();
        if open == 0 {
            return p.clone();
        }
    }
}

/// A batch's event stream: each completion event's name and data (`task`, `end`), as they
/// come; the `started` events between them, whose timing depends on how fast a task
/// ends, are left out (`a_stream_announces_starts_and_resumes_after_the_last_id` reads
/// them).
fn stream(server: &Server, batch: i64) -> impl Iterator<Item = (String, Value)> {
    let mut stream = TcpStream::connect(server.address()).unwrap();
    write!(
        stream,
        "GET /v1/batches/{batch}/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\r\n",
        server.token
    )
    .unwrap();
    let mut name = String::new();
    BufReader::new(stream).lines().filter_map(move |line| {
        let line = line.unwrap();
        if let Some(event) = line.strip_prefix("event: ") {
            name = event.to_owned();
        }
        let data = line.strip_prefix("data: ")?;
        (name != "started").then(|| (name.clone(), serde_json::from_str(data).unwrap()))
    })
}

/// The events of a batch's stream, until its `end`: each event's name and task id.
fn events(server: &Server, batch: i64) -> Vec<(String, Option<i64>)> {
    events_until(server, batch, "end")
}

/// The events of a batch's stream, until the first named `last`.
fn events_until(server: &Server, batch: i64, last: &str) -> Vec<(String, Option<i64>)> {
    let mut seen = Vec::new();
    for (name, data) in stream(server, batch) {
        seen.push((name.clone(), data["id"].as_i64()));
        if name == last {
            return seen;
        }
    }
    panic!("the stream closed before its {last}: {seen:?}");
}

/// A stream says when each attempt starts and when its task ends; a stream opened again
/// with the last `id` received goes on after it, sending nothing twice.
#[test]
fn a_stream_announces_starts_and_resumes_after_the_last_id() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    server.upload("misbehave");
    let url = &server.url;
    // Held until the stream is open, so that it sees every start.
    let (status, opened) = call(
        "POST",
        &format!("{url}/v1/batches"),
        Some(&server.token),
        Some(json!({ "max_parallel": 0, "tasks": [
            { "module": "misbehave", "input": "sleep:500", "order": 0 },
            { "module": "misbehave", "input": "sleep:500", "order": 1 },
        ]})),
    );
    assert_eq!(status, 201, "{opened}");
    let batch = opened["batch"]["id"].as_i64().unwrap();
    let tasks: Vec<i64> = opened["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_i64().unwrap())
        .collect();
    let (status, events) = server.events(batch, None);
    assert!(status.contains(" 200 "), "{status}");
    call(
        "PUT",
        &format!("{url}/v1/batches/{batch}/max_parallel"),
        Some(&server.token),
        Some(json!({ "max_parallel": null })),
    );
    let mut seen = Vec::new();
    for event in events {
        let end = event.0 == "end";
        seen.push(event);
        if end {
            break;
        }
    }
    let names: Vec<(&str, Option<i64>)> = seen.iter().map(|(n, _, t)| (n.as_str(), *t)).collect();
    assert_eq!(
        names,
        [
            ("started", Some(tasks[0])),
            ("task", Some(tasks[0])),
            ("started", Some(tasks[1])),
            ("task", Some(tasks[1])),
            ("end", Some(batch)),
        ],
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .all(|(name, id, _)| (name == "task") == id.is_some()),
        "{seen:?}"
    );

    // Reconnecting after the first task's event: the second task's, then the end.
    let first = seen[1].1.clone().unwrap();
    let (_, events) = server.events(batch, Some(&first));
    let resumed: Vec<(String, Option<i64>)> = events
        .map(|(name, _, task)| (name, task))
        .take_while(|(name, _)| name != "end")
        .collect();
    assert_eq!(resumed, [("task".to_owned(), Some(tasks[1]))]);

    // Only an id as the document gives it: 1 to 18 digits.
    for refused in ["yesterday", "+1", "1234567890123456789"] {
        let (status, _) = server.events(batch, Some(refused));
        assert!(status.contains(" 400 "), "{refused}: {status}");
    }
}

/// A task fails until the file it reads exists; once it does, the batch's failed tasks are
/// driven again: they run with fresh attempts and succeed; the batch, which had ended,
/// ends again, and its event stream says so.
#[test]
fn failed_tasks_are_driven_again_once_fixed() {
    let data = tempfile::tempdir().unwrap();
    let world = tempfile::tempdir().unwrap();
    let mount = format!("data={}", world.path().display());
    let server = Server::start_with(data.path(), 2, |command| {
        command.args(["--mount", &mount]);
    });
    server.upload("misbehave");
    let task = json!({
        "module": "misbehave", "input": "read:/data/ready", "max_attempts": 2,
        "backoff": "1ms", "mounts": [{ "name": "data" }],
    });
    let (status, opened) = call(
        "POST",
        &format!("{}/v1/batches", server.url),
        Some(&server.token),
        Some(
            json!({ "tasks": [task, task, { "module": "misbehave", "input": "ok", "order": 1 }] }),
        ),
    );
    assert_eq!(status, 201, "{opened}");
    let batch = opened["batch"]["id"].as_i64().unwrap();
    let ids: Vec<i64> = serde_json::from_value(opened["tasks"].clone()).unwrap();
    let progress = wait(&server, batch);
    assert_eq!(
        (progress["failed"].as_u64(), progress["waiting"].as_u64()),
        (Some(2), Some(0)),
        "{progress}"
    );
    let first_end = events(&server, batch);
    assert_eq!(first_end.last().unwrap().0, "end");

    std::fs::write(world.path().join("ready"), "fixed").unwrap();
    let (status, answer) = call(
        "POST",
        &format!("{}/v1/tasks/{}/retry", server.url, ids[2]),
        Some(&server.token),
        None,
    );
    assert_eq!(
        status, 409,
        "a task that succeeded does not run again: {answer}"
    );
    let (status, answer) = call(
        "POST",
        &format!("{}/v1/batches/{batch}/retry", server.url),
        Some(opened["handle"].as_str().unwrap()),
        None,
    );
    assert_eq!(
        (status, answer["retried"].as_u64()),
        (200, Some(2)),
        "{answer}"
    );
    let progress = wait(&server, batch);
    assert_eq!(progress["succeeded"].as_u64(), Some(3), "{progress}");

    let (_, view) = call(
        "GET",
        &format!("{}/v1/tasks/{}", server.url, ids[0]),
        Some(&server.token),
        None,
    );
    let attempts: Vec<(u64, String)> = view["log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["attempt"].as_u64().unwrap(),
                a["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        attempts,
        [
            (1, "guest-error".to_owned()),
            (2, "guest-error".to_owned()),
            (3, "succeeded".to_owned())
        ]
    );
    assert_eq!(
        (view["attempts"].as_u64(), view["max_attempts"].as_u64()),
        (Some(3), Some(4)),
        "its budget counts again from the re-drive"
    );
    // A new stream sends the re-driven tasks' second ends, then the batch's end again.
    let again = events(&server, batch);
    let sent = |id: i64| {
        again
            .iter()
            .filter(|(name, task)| name == "task" && *task == Some(id))
            .count()
    };
    assert_eq!((sent(ids[0]), sent(ids[1])), (1, 1), "{again:?}");
    assert_eq!(again.last().unwrap().0, "end");
}

/// A stream open across a re-drive sends the task again when it ends again; the batch's
/// end comes once everything has ended.
#[test]
fn a_stream_sends_a_task_again_when_it_ends_again() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    server.upload("misbehave");
    let url = &server.url;
    // The held task keeps the batch open while the other fails and runs again.
    call(
        "POST",
        &format!("{url}/v1/groups/later/pause"),
        Some(&server.token),
        None,
    );
    let (_, opened) = call(
        "POST",
        &format!("{url}/v1/batches"),
        Some(&server.token),
        Some(json!({ "tasks": [
            { "module": "misbehave", "input": "error", "max_attempts": 1 },
            { "module": "misbehave", "input": "ok", "group": "later" },
        ]})),
    );
    let batch = opened["batch"]["id"].as_i64().unwrap();
    let failing = opened["tasks"][0].as_i64().unwrap();
    let mut events = stream(&server, batch);
    let (name, task) = events.next().unwrap();
    assert_eq!(
        (name.as_str(), task["id"].as_i64()),
        ("task", Some(failing))
    );
    assert_eq!(task["attempts"].as_u64(), Some(1));

    let (status, _) = call(
        "POST",
        &format!("{url}/v1/tasks/{failing}/retry"),
        Some(&server.token),
        None,
    );
    assert_eq!(status, 200);
    let (name, task) = events.next().unwrap();
    assert_eq!(
        (
            name.as_str(),
            task["id"].as_i64(),
            task["attempts"].as_u64()
        ),
        ("task", Some(failing), Some(2)),
        "sent again for its second end"
    );
    call(
        "POST",
        &format!("{url}/v1/groups/later/resume"),
        Some(&server.token),
        None,
    );
    let mut rest = Vec::new();
    for (name, _) in events.by_ref() {
        rest.push(name.clone());
        if name == "end" {
            break;
        }
    }
    assert_eq!(rest, ["task", "end"]);
}

/// A paused batch and a paused group hold their tasks (shown as held) until resumed.
#[test]
fn paused_work_is_held_until_resumed() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    server.upload("misbehave");
    let url = &server.url;
    let (status, group) = call(
        "POST",
        &format!("{url}/v1/groups/db/pause"),
        Some(&server.token),
        None,
    );
    assert_eq!(
        (status, group["paused"].as_bool()),
        (200, Some(true)),
        "{group}"
    );
    let (status, opened) = call(
        "POST",
        &format!("{url}/v1/batches"),
        Some(&server.token),
        Some(json!({ "max_parallel": 0, "tasks": [{ "module": "misbehave", "input": "ok" }] })),
    );
    assert_eq!(status, 201, "{opened}");
    let held = opened["batch"]["id"].as_i64().unwrap();
    assert_eq!(
        opened["batch"]["progress"]["held"].as_u64(),
        Some(1),
        "{opened}"
    );
    let (_, other) = call(
        "POST",
        &format!("{url}/v1/batches"),
        Some(&server.token),
        Some(json!({ "tasks": [
            { "module": "misbehave", "input": "ok", "group": "db" },
            { "module": "misbehave", "input": "ok" },
        ]})),
    );
    let other = other["batch"]["id"].as_i64().unwrap();
    // The batch and the group hold theirs: the free task alone runs.
    events_until(&server, other, "task");
    let (_, info) = call(
        "GET",
        &format!("{url}/v1/batches/{other}"),
        Some(&server.token),
        None,
    );
    assert_eq!(
        (
            info["progress"]["succeeded"].as_u64(),
            info["progress"]["held"].as_u64()
        ),
        (Some(1), Some(1)),
        "{info}"
    );

    let (status, batch) = call(
        "PUT",
        &format!("{url}/v1/batches/{held}/max_parallel"),
        Some(&server.token),
        Some(json!({ "max_parallel": 2 })),
    );
    assert_eq!(
        (status, batch["max_parallel"].as_u64()),
        (200, Some(2)),
        "{batch}"
    );
    call(
        "POST",
        &format!("{url}/v1/groups/db/resume"),
        Some(&server.token),
        None,
    );
    assert_eq!(wait(&server, held)["succeeded"].as_u64(), Some(1));
    assert_eq!(wait(&server, other)["succeeded"].as_u64(), Some(2));
}

/// A batch handle's bulk action that names no batch reaches its own batch's tasks only, and
/// one that names another batch is refused.
#[test]
fn a_handles_bulk_action_reaches_its_own_batch_only() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    server.upload("misbehave");
    let url = &server.url;
    // Held (max_parallel 0), so nothing starts while the test looks.
    let open = || {
        let (status, opened) = call(
            "POST",
            &format!("{url}/v1/batches"),
            Some(&server.token),
            Some(json!({ "max_parallel": 0, "tasks": [
                { "module": "misbehave", "input": "ok", "group": "g" },
                { "module": "misbehave", "input": "ok", "group": "g" },
            ]})),
        );
        assert_eq!(status, 201, "{opened}");
        let id = opened["batch"]["id"].as_i64().unwrap();
        (id, opened["handle"].as_str().unwrap().to_owned())
    };
    let (mine, handle) = open();
    let (other, _) = open();

    let (status, answer) = call(
        "PUT",
        &format!("{url}/v1/tasks/priority?group=g"),
        Some(&handle),
        Some(json!({ "priority": 5 })),
    );
    assert_eq!(
        (status, answer["changed"].as_u64()),
        (200, Some(2)),
        "{answer}"
    );
    let (status, answer) = call(
        "POST",
        &format!("{url}/v1/tasks/cancel?group=g"),
        Some(&handle),
        None,
    );
    assert_eq!(
        (status, answer["cancelled"].as_u64()),
        (200, Some(2)),
        "{answer}"
    );
    let (status, answer) = call(
        "POST",
        &format!("{url}/v1/tasks/cancel?batch={other}"),
        Some(&handle),
        None,
    );
    assert_eq!(
        (status, answer["error"].as_str()),
        (403, Some("forbidden")),
        "{answer}"
    );

    let progress = |batch: i64| {
        let (_, info) = call(
            "GET",
            &format!("{url}/v1/batches/{batch}"),
            Some(&server.token),
            None,
        );
        (
            info["progress"]["cancelled"].as_u64(),
            info["progress"]["held"].as_u64(),
        )
    };
    assert_eq!(progress(mine), (Some(2), Some(0)));
    assert_eq!(
        progress(other),
        (Some(0), Some(2)),
        "the other batch is untouched"
    );
}

/// An opening with its tasks, repeated under its key, gets the first answer; another
/// request under the key is refused; a refused plan leaves no batch.
#[test]
fn openings_and_submissions_are_done_once_per_key() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    server.upload("misbehave");
    let url = format!("{}/v1/batches", server.url);
    let plan = json!({ "name": "once", "tasks": [{ "module": "misbehave", "input": "ok" }] });
    let (status, replayed, first) = keyed(&url, &server.token, "key-1", &plan);
    assert_eq!((status, replayed), (201, false), "{first}");
    let (status, replayed, again) = keyed(&url, &server.token, "key-1", &plan);
    assert_eq!((status, replayed), (201, true), "{again}");
    assert_eq!(again, first, "the first answer, handle included");
    let (status, _, other) = keyed(&url, &server.token, "key-1", &json!({ "name": "other" }));
    assert_eq!(status, 409, "{other}");

    let batch = first["batch"]["id"].as_i64().unwrap();
    let handle = first["handle"].as_str().unwrap();
    let tasks = format!("{url}/{batch}/tasks");
    let more = json!({ "tasks": [{ "module": "misbehave", "input": "ok" }] });
    let (status, _, submitted) = keyed(&tasks, handle, "key-2", &more);
    assert_eq!(status, 201, "{submitted}");
    let (status, replayed, repeated) = keyed(&tasks, handle, "key-2", &more);
    assert_eq!((status, replayed, &repeated), (201, true, &submitted));
    assert_eq!(wait(&server, batch)["succeeded"].as_u64(), Some(2));

    let (status, _, refused) = keyed(
        &url,
        &server.token,
        "key-3",
        &json!({ "tasks": [{ "module": "misbehave" }, { "module": "missing" }] }),
    );
    assert_eq!(status, 400, "{refused}");
    let (status, _) = call(
        "GET",
        &format!("{url}/{}", batch + 1),
        Some(&server.token),
        None,
    );
    assert_eq!(status, 404, "a refused plan left a batch");
    let (status, _, bad) = keyed(&url, &server.token, "a key with spaces", &plan);
    assert_eq!(status, 400, "{bad}");
}

/// `qhost submit --delay` whose answer is lost on the way sends its request again under
/// the same key: the repeat asks the same delay (though from a later now), so it is the
/// same request, gets the first answer, and submits nothing more.
#[test]
fn a_delayed_submission_whose_answer_is_lost_is_done_once() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    server.upload("misbehave");
    let (proxy, dropped) = lossy_proxy(server.address(), 1);
    let output = server
        .cli()
        .env("QHOST_SERVER", format!("http://{proxy}"))
        .args(["submit", "--module", "misbehave", "--input", "ok"])
        .args(["--delay", "1h", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the first answer was lost"
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let task = report["task"].as_i64().unwrap();
    let (status, _) = call(
        "GET",
        &format!("{}/v1/tasks/{}", server.url, task + 1),
        Some(&server.token),
        None,
    );
    assert_eq!(status, 404, "the repeat submitted no second task");

    // Over the API, into a batch: the same body twice, some time apart.
    let opened = server.open_batch(json!({}));
    let url = format!("{}/v1/batches/{}/tasks", server.url, opened.id);
    let delayed = json!({ "tasks": [{ "module": "misbehave", "input": "ok", "delay": "10m" }] });
    let (status, replayed, first) = keyed(&url, &opened.handle, "delayed", &delayed);
    assert_eq!((status, replayed), (201, false), "{first}");
    std::thread::sleep(std::time::Duration::from_millis(5));
    let (status, replayed, again) = keyed(&url, &opened.handle, "delayed", &delayed);
    assert_eq!((status, replayed, &again), (201, true, &first));
    let later = json!({ "tasks": [{ "module": "misbehave", "input": "ok", "delay": "11m" }] });
    let (status, _, other) = keyed(&url, &opened.handle, "delayed", &later);
    assert_eq!(status, 409, "another delay is another request: {other}");
}

/// A proxy to `server` that answers nothing to the first `drop` requests: it passes each
/// on, reads the beginning of the answer (the server has done the request), and closes
/// the connection. Later connections pass through. Returns its address and the count of
/// requests it dropped.
fn lossy_proxy(server: &str, drop: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let dropped = Arc::new(AtomicUsize::new(0));
    let server = server.to_owned();
    let count = dropped.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let mut client = client.unwrap();
            let mut upstream = TcpStream::connect(&server).unwrap();
            if count.load(Ordering::SeqCst) < drop {
                let request = read_request(&mut client);
                upstream.write_all(&request).unwrap();
                let mut answer = [0u8; 1];
                upstream.read_exact(&mut answer).unwrap();
                count.fetch_add(1, Ordering::SeqCst);
                continue;
            }
            let (mut client_in, mut upstream_out) =
                (client.try_clone().unwrap(), upstream.try_clone().unwrap());
            std::thread::spawn(move || std::io::copy(&mut client_in, &mut upstream_out));
            std::thread::spawn(move || std::io::copy(&mut upstream, &mut client));
        }
    });
    (address, dropped)
}

/// One HTTP request as it came: its head and its body (by `content-length`).
fn read_request(stream: &mut TcpStream) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the client closed before its request was whole");
        bytes.extend_from_slice(&buf[..n]);
        let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&bytes[..end]).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        if bytes.len() >= end + 4 + length {
            return bytes;
        }
    }
}

fn text(output: &Output) -> String {
    format!(
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `qhost batch submit` opens and submits in one request; when its answer is lost on the
/// way, it sends it again under the same key, and the plan is submitted once. The batch
/// and group commands pause, limit and re-drive.
#[test]
fn the_command_line_submits_once_and_operates_batches() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    server.upload("misbehave");
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "max_parallel = 0\n\
         [[task]]\nmodule = \"misbehave\"\ninput = \"error\"\nmax_attempts = 1\n\
         [[task]]\nmodule = \"misbehave\"\ninput = \"ok\"\ngroup = \"g\"\n",
    )
    .unwrap();
    let (proxy, dropped) = lossy_proxy(server.address(), 1);
    let output = server
        .cli()
        .env("QHOST_SERVER", format!("http://{proxy}"))
        .args(["batch", "submit", plan.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the first answer was lost"
    );
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("sending it again"),
        "{}",
        text(&output)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let batch = report["batch"].as_i64().unwrap().to_string();
    let (_, info) = call(
        "GET",
        &format!("{}/v1/batches/{batch}", server.url),
        Some(&server.token),
        None,
    );
    assert_eq!(
        (info["progress"]["held"].as_u64(), info["name"].clone()),
        (Some(2), Value::Null),
        "one batch of two tasks, held by its limit of 0: {info}"
    );
    let (status, _) = call(
        "GET",
        &format!(
            "{}/v1/batches/{}",
            server.url,
            report["batch"].as_i64().unwrap() + 1
        ),
        Some(&server.token),
        None,
    );
    assert_eq!(status, 404, "the repeat opened no second batch");

    let run = |args: &[&str]| {
        let output = server.run(args);
        assert!(output.status.success(), "{args:?}: {}", text(&output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    assert!(run(&["group", "pause", "g"]).contains("(paused)"));
    assert!(run(&["batch", "limit", &batch, "none"]).contains("no limit"));
    // The task outside the group runs, and fails; the group's stays held.
    events_until(&server, report["batch"].as_i64().unwrap(), "task");
    let shown = run(&["batch", "show", &batch]);
    assert!(
        shown.contains("1 held") && shown.contains("1 failed"),
        "{shown}"
    );
    assert!(run(&["group", "resume", "g"]).contains("limit 1,"));
    let failed = server.run(&["batch", "wait", &batch]);
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    assert!(run(&["batch", "retry", &batch]).contains("1 task to run again"));
    assert!(run(&["batch", "pause", &batch]).contains("paused"));
    assert!(run(&["batch", "resume", &batch]).contains("resumed"));
    let failed = server.run(&["batch", "wait", &batch]);
    assert_eq!(
        failed.status.code(),
        Some(1),
        "it fails again: {}",
        text(&failed)
    );
    let id = report["tasks"][0].as_i64().unwrap().to_string();
    let retried = run(&["task", "retry", &id]);
    assert!(
        retried.contains(" of 3"),
        "two attempts made, one more granted: {retried}"
    );
}
