//! `qhost serve` end to end: a real server on port 0, driven over HTTP as a client in any
//! language would: modules, batches, handles, waiting, bad input, a restart with work
//! queued and running; and a hostile world: credentials checked before bodies are read,
//! slow and silent clients, a taken port or data directory, and private files.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use qhost_tests::server::{Server, agent, call, refused, serve_command};
use serde_json::{Value, json};

fn upload(server: &Server, bytes: &[u8], name: &str) -> (u16, Value) {
    let mut response = agent()
        .post(format!("{}/v1/modules?name={name}", server.url))
        .header("Authorization", format!("Bearer {}", server.token))
        .send(bytes)
        .unwrap();
    let status = response.status().as_u16();
    (
        status,
        serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap(),
    )
}

fn open(server: &Server) -> (i64, String) {
    let opened = server.open_batch(json!({}));
    (opened.id, opened.handle)
}

#[test]
fn a_plan_runs_through_the_api_and_handles_guard_batches() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    let (status, module) = upload(
        &server,
        &std::fs::read(qhost_tests::guest("sleep")).unwrap(),
        "sleep",
    );
    assert_eq!(status, 201, "{module}");
    let (batch, handle) = open(&server);
    let (other, other_handle) = open(&server);
    let tasks_url = format!("{}/v1/batches/{batch}/tasks", server.url);
    let plan = json!({ "tasks": [
        { "module": "sleep", "input": "30", "order": 1, "group": "db" },
        { "module": "sleep", "input": "30", "order": 1, "group": "db" },
        { "module": module["digest"], "input": "1", "order": 2 },
    ]});
    let (status, body) = call("POST", &tasks_url, Some(&handle), Some(plan));
    assert_eq!(status, 201, "{body}");
    let ids: Vec<i64> = body["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();

    // The batch's own handle may change its priority; another batch's may not, and no
    // credentials get nothing.
    let priority = format!("{}/v1/batches/{batch}/priority", server.url);
    assert_eq!(
        call(
            "PUT",
            &priority,
            Some(&handle),
            Some(json!({"priority": 5}))
        )
        .0,
        200
    );
    assert_eq!(
        call(
            "PUT",
            &priority,
            Some(&other_handle),
            Some(json!({"priority": 9}))
        )
        .0,
        403
    );
    assert_eq!(
        call("PUT", &priority, None, Some(json!({"priority": 9}))).0,
        401
    );
    let (status, body) = call(
        "GET",
        &format!("{}/v1/tasks/{}", server.url, ids[0]),
        Some(&other_handle),
        None,
    );
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("forbidden")),
        "reveals nothing: {body}"
    );

    let (status, info) = call(
        "GET",
        &format!("{}/v1/batches/{batch}/wait?timeout=60s", server.url),
        Some(&handle),
        None,
    );
    assert_eq!(status, 200);
    assert_eq!(info["progress"]["succeeded"], 3, "{info}");
    assert_eq!(info["priority"], 5);
    let (status, task) = call(
        "GET",
        &format!("{}/v1/tasks/{}", server.url, ids[2]),
        Some(&handle),
        None,
    );
    assert_eq!(
        (status, task["state"].as_str()),
        (200, Some("succeeded")),
        "{task}"
    );
    assert_eq!(task["attempts"], 1, "{task}");
    assert_eq!(task["log"][0]["outcome"], "succeeded");
    let mut output = agent()
        .get(format!("{}/v1/tasks/{}/output", server.url, ids[2]))
        .header("Authorization", format!("Bearer {handle}"))
        .call()
        .unwrap();
    assert_eq!(output.body_mut().read_to_string().unwrap(), "slept 1 ms");

    let (status, log) = call(
        "GET",
        &format!("{}/v1/attempts?batch={batch}", server.url),
        Some(&handle),
        None,
    );
    assert_eq!(status, 200);
    assert_eq!(log["attempts"].as_array().unwrap().len(), 3);
    assert_eq!(
        call(
            "GET",
            &format!("{}/v1/attempts", server.url),
            Some(&handle),
            None
        )
        .0,
        403
    );
    assert_eq!(
        call(
            "DELETE",
            &format!("{}/v1/batches/{other}", server.url),
            Some(&other_handle),
            None
        )
        .0,
        204
    );
    assert!(server.stop().success());
}

#[test]
fn bad_input_gets_a_clear_4xx_and_stores_nothing() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    let (status, body) = upload(&server, b"not a component", "junk");
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid")),
        "{body}"
    );
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("not a WebAssembly file")
    );
    // The server answers 413 as soon as the limit is passed; a client still sending may
    // see the connection closed before it reads that answer.
    let too_big = vec![0u8; qhost::api::MAX_MODULE_BYTES + 1];
    let sent = agent()
        .post(format!("{}/v1/modules?name=big", server.url))
        .header("Authorization", format!("Bearer {}", server.token))
        .send(&too_big[..]);
    if let Ok(mut response) = sent {
        assert_eq!(response.status().as_u16(), 413);
        let body = response.body_mut().read_to_string().unwrap();
        assert!(body.contains("too-large"), "{body}");
    }
    let (_, modules) = call(
        "GET",
        &format!("{}/v1/modules", server.url),
        Some(&server.token),
        None,
    );
    assert_eq!(modules, json!([]), "nothing was stored");

    let (status, echo) = upload(
        &server,
        &std::fs::read(qhost_tests::guest("echo")).unwrap(),
        "echo",
    );
    assert_eq!(status, 201);
    let (batch, handle) = open(&server);
    let tasks_url = format!("{}/v1/batches/{batch}/tasks", server.url);
    // 422: the JSON does not fit the schema; 400: a value is out of range.
    let cases = [
        (
            json!({"tasks": [{"module": "nope"}]}),
            400,
            "no module has the digest or name `nope`",
        ),
        (
            json!({"tasks": [{"module": "echo", "colour": "red"}]}),
            422,
            "unknown field `colour`",
        ),
        (
            json!({"tasks": [{"module": "echo", "memory": "1PiB"}]}),
            400,
            "limit `memory`",
        ),
        (
            json!({"tasks": [{"module": "echo", "timeout": "-3s"}]}),
            400,
            "field `timeout`",
        ),
        (
            json!({"tasks": [{"module": "echo", "max_attempts": 0}]}),
            400,
            "field `max_attempts`",
        ),
        (
            json!({"tasks": [{"module": "echo", "input": "a", "input_json": 1}]}),
            400,
            "at most one of",
        ),
        (json!({"tasks": "many"}), 422, "tasks"),
    ];
    for (body, expected_status, expected) in cases {
        let (status, answer) = call("POST", &tasks_url, Some(&handle), Some(body.clone()));
        assert_eq!(status, expected_status, "{body}: {answer}");
        assert!(
            answer["detail"].as_str().unwrap().contains(expected),
            "{body}: {answer}"
        );
    }
    let mut malformed = agent()
        .post(&tasks_url)
        .header("Authorization", format!("Bearer {handle}"))
        .header("content-type", "application/json")
        .send("{\"tasks\": [")
        .unwrap();
    assert_eq!(malformed.status().as_u16(), 400);
    assert!(
        malformed
            .body_mut()
            .read_to_string()
            .unwrap()
            .contains("\"error\"")
    );
    let (_, info) = call(
        "GET",
        &format!("{}/v1/batches/{batch}", server.url),
        Some(&handle),
        None,
    );
    assert_eq!(
        info["progress"]["waiting"].as_u64().unwrap() + info["progress"]["ready"].as_u64().unwrap(),
        0
    );

    // An order lower than one that already started is refused.
    let first = json!({"tasks": [{"module": echo["digest"], "input": "x", "order": 5}]});
    assert_eq!(call("POST", &tasks_url, Some(&handle), Some(first)).0, 201);
    call(
        "GET",
        &format!("{}/v1/batches/{batch}/wait?timeout=60s", server.url),
        Some(&handle),
        None,
    );
    let lower = json!({"tasks": [{"module": "echo", "order": 4}]});
    let (status, answer) = call("POST", &tasks_url, Some(&handle), Some(lower));
    assert_eq!(status, 400);
    assert!(
        answer["detail"]
            .as_str()
            .unwrap()
            .contains("order 4 is lower than order 5"),
        "{answer}"
    );
    assert!(server.stop().success());
}

#[test]
fn out_of_range_settings_and_wrong_credentials_are_refused() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    upload(
        &server,
        &std::fs::read(qhost_tests::guest("echo")).unwrap(),
        "echo",
    );
    let (batch, handle) = open(&server);
    let url = |path: &str| format!("{}{path}", server.url);
    let admin = Some(server.token.as_str());
    let cases = [
        (
            "POST",
            url(&format!("/v1/batches/{batch}/retry?outcome=gone")),
            Some(handle.as_str()),
            None,
            400,
            "unknown outcome `gone`",
        ),
        (
            "POST",
            url(&format!("/v1/tasks/cancel?group=g&batch={}", batch + 1)),
            Some(handle.as_str()),
            None,
            403,
            "do not open this resource",
        ),
        (
            "POST",
            url(&format!("/v1/batches/{batch}/tasks")),
            Some(handle.as_str()),
            Some(json!({"tasks": []})),
            400,
            "no tasks",
        ),
        (
            "GET",
            url(&format!("/v1/batches/{batch}/wait?timeout=1h")),
            Some(handle.as_str()),
            None,
            400,
            "at most 5m",
        ),
        (
            "GET",
            url("/v1/attempts?limit=0"),
            admin,
            None,
            400,
            "parameter `limit`",
        ),
        (
            "GET",
            url("/v1/attempts?outcome=exploded"),
            admin,
            None,
            400,
            "parameter `outcome`",
        ),
        (
            "GET",
            url("/v1/running"),
            Some(handle.as_str()),
            None,
            403,
            "do not open",
        ),
        ("GET", url("/v1/modules"), None, None, 401, "Authorization"),
        (
            "GET",
            url("/v1/modules"),
            Some("qha_guessed"),
            None,
            401,
            "Authorization",
        ),
    ];
    for (method, url, credential, body, expected_status, expected) in cases {
        let (status, answer) = call(method, &url, credential, body);
        assert_eq!(status, expected_status, "{method} {url}: {answer}");
        assert!(
            answer["detail"].as_str().unwrap().contains(expected),
            "{method} {url}: {answer}"
        );
    }
    let (_, info) = call(
        "GET",
        &url(&format!("/v1/batches/{batch}")),
        Some(&handle),
        None,
    );
    assert_eq!(info["progress"]["waiting"], 0, "nothing was stored: {info}");
    assert!(server.stop().success());
}

#[test]
fn a_restart_loses_nothing_queued_or_running() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    upload(
        &server,
        &std::fs::read(qhost_tests::guest("sleep")).unwrap(),
        "sleep",
    );
    let (batch, handle) = open(&server);
    let tasks: Vec<Value> = (0..12)
        .map(|i| json!({"module": "sleep", "input": "200", "order": i / 4}))
        .collect();
    let (status, _) = call(
        "POST",
        &format!("{}/v1/batches/{batch}/tasks", server.url),
        Some(&handle),
        Some(json!({"tasks": tasks})),
    );
    assert_eq!(status, 201);
    // Stop while the first order runs: those finish within the grace period, the rest stay queued.
    loop {
        let (_, running) = call(
            "GET",
            &format!("{}/v1/running", server.url),
            Some(&server.token),
            None,
        );
        if !running.as_array().unwrap().is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(server.stop().success(), "a graceful stop exits 0");

    let server = Server::start(data.path(), 2);
    let (_, info) = call(
        "GET",
        &format!("{}/v1/batches/{batch}/wait?timeout=120s", server.url),
        Some(&handle),
        None,
    );
    assert_eq!(info["progress"]["succeeded"], 12, "{info}");
    let (_, log) = call(
        "GET",
        &format!("{}/v1/attempts?batch={batch}", server.url),
        Some(&handle),
        None,
    );
    assert!(
        log["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["outcome"] == "succeeded"),
        "{log}"
    );
    assert!(server.stop().success());
}

/// A released batch takes its tasks with it: the next batch opened gets a new id, and its
/// handle reaches nothing of the released one's.
#[test]
fn a_released_batch_leaves_nothing_to_the_next() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    upload(
        &server,
        &std::fs::read(qhost_tests::guest("echo")).unwrap(),
        "echo",
    );
    let url = |path: &str| format!("{}{path}", server.url);
    let (batch, handle) = open(&server);
    let (status, body) = call(
        "POST",
        &url(&format!("/v1/batches/{batch}/tasks")),
        Some(&handle),
        Some(json!({"tasks": [{"module": "echo", "input": "the first tenant's secret"}]})),
    );
    assert_eq!(status, 201, "{body}");
    let task = body["tasks"][0].as_i64().unwrap();
    let (_, info) = call(
        "GET",
        &url(&format!("/v1/batches/{batch}/wait?timeout=60s")),
        Some(&handle),
        None,
    );
    assert_eq!(info["progress"]["succeeded"], 1, "{info}");
    let (status, _) = call(
        "DELETE",
        &url(&format!("/v1/batches/{batch}")),
        Some(&handle),
        None,
    );
    assert_eq!(status, 204);

    let (next, next_handle) = open(&server);
    assert_ne!(next, batch, "the released batch's id was given again");
    let (_, info) = call(
        "GET",
        &url(&format!("/v1/batches/{next}")),
        Some(&next_handle),
        None,
    );
    assert_eq!(info["progress"]["succeeded"], 0, "{info}");
    for path in [
        format!("/v1/tasks/{task}"),
        format!("/v1/tasks/{task}/output"),
    ] {
        // The next batch's handle opens nothing of the released one's (a handle is told
        // alike of what it does not hold and of what does not exist); the admin learns the
        // task is gone.
        let (status, body) = call("GET", &url(&path), Some(&next_handle), None);
        assert_eq!(status, 403, "{path}: {body}");
        let (status, body) = call("GET", &url(&path), Some(&server.token), None);
        assert_eq!(status, 404, "{path} as admin: {body}");
    }
    assert!(server.stop().success());
}

/// Sends a request's head (and `body`) on a connection of its own, with `Content-Length`
/// `length`; returns the status the server answers within `within`, or `None`.
fn status_before_body(
    server: &Server,
    request_line: &str,
    credential: &str,
    length: usize,
    body: &str,
    within: Duration,
) -> Option<u16> {
    let mut tcp = TcpStream::connect(server.address()).unwrap();
    tcp.set_read_timeout(Some(within)).unwrap();
    let head = format!(
        "{request_line} HTTP/1.1\r\nHost: qhost\r\nAuthorization: Bearer {credential}\r\n\
         Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n{body}"
    );
    tcp.write_all(head.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while !answer.windows(2).any(|w| w == b"\r\n") {
        match tcp.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
    }
    let line = String::from_utf8_lossy(&answer);
    line.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

/// Whether the server closes `tcp` within `within` (reads give end of file or an error).
fn closed_within(tcp: &mut TcpStream, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        tcp.set_read_timeout(Some(deadline - Instant::now() + Duration::from_millis(1)))
            .unwrap();
        match tcp.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false;
            }
            Err(_) => return true,
        }
    }
    false
}

/// Reads `tcp` until the server closes it or `within` passes: the bytes read, and whether
/// it was closed.
fn drain(tcp: &mut TcpStream, within: Duration) -> (usize, bool) {
    let deadline = Instant::now() + within;
    let mut buf = vec![0u8; 1 << 16];
    let mut received = 0;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        tcp.set_read_timeout(Some(left + Duration::from_millis(1)))
            .unwrap();
        match tcp.read(&mut buf) {
            Ok(0) => return (received, true),
            Ok(n) => received += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => break,
            Err(_) => return (received, true),
        }
    }
    (received, false)
}

/// `GET /healthz` on a connection of its own, again while the server answers `503 busy`:
/// whether it is answered 200 within `within`.
fn healthy_within(server: &Server, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match status_before_body(server, "GET /healthz", "none", 0, "", left) {
            Some(200) => return true,
            Some(503) => std::thread::sleep(Duration::from_millis(100)),
            _ => return false,
        }
    }
    false
}

#[test]
fn credentials_are_checked_before_the_body_is_read() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    let (batch, handle) = open(&server);
    let (_, other_handle) = open(&server);
    let submit = format!("POST /v1/batches/{batch}/tasks");
    let forged = format!("qhb_{batch}_{}", "0".repeat(64));
    // Each request announces the largest body the route takes and sends a few bytes of
    // it: refused credentials are answered at once, without waiting for the rest.
    let cases = [
        (
            &submit,
            other_handle.as_str(),
            403,
            "another batch's handle",
        ),
        (&submit, forged.as_str(), 403, "a forged handle"),
        (&submit, "qhb_nonsense", 401, "a malformed handle"),
        (&submit, "qha_guessed", 401, "a wrong token"),
        (
            &"POST /v1/modules?name=m".to_owned(),
            other_handle.as_str(),
            403,
            "a handle, uploading a module",
        ),
    ];
    for (request, credential, expected, what) in cases {
        let status = status_before_body(
            &server,
            request,
            credential,
            qhost::api::MAX_SUBMIT_BYTES,
            "{\"tasks\": [",
            Duration::from_secs(10),
        );
        assert_eq!(status, Some(expected), "{what}: {request}");
    }
    // The batch's own handle is let in, and its body read.
    let (status, body) = call(
        "POST",
        &format!("{}/v1/batches/{batch}/tasks", server.url),
        Some(&handle),
        Some(json!({"tasks": []})),
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("no tasks"),
        "{body}"
    );
    assert!(server.stop().success());
}

#[test]
fn a_handle_cannot_tell_whether_what_it_does_not_hold_exists() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    upload(
        &server,
        &std::fs::read(qhost_tests::guest("echo")).unwrap(),
        "echo",
    );
    let (_, mine) = open(&server);
    let (theirs, their_handle) = open(&server);
    let (status, body) = call(
        "POST",
        &format!("{}/v1/batches/{theirs}/tasks", server.url),
        Some(&their_handle),
        Some(json!({"tasks": [{"module": "echo", "input": "x"}]})),
    );
    assert_eq!(status, 201, "{body}");
    let their_task = body["tasks"][0].as_i64().unwrap();
    let no_task = their_task + 1000;

    // Their task and no task at all look the same to my handle, whatever I do.
    let requests = [
        ("GET", "", None),
        ("GET", "/output", None),
        ("POST", "/cancel", None),
        ("PUT", "/priority", Some(json!({"priority": 3}))),
    ];
    for (method, suffix, body) in requests {
        let url = |task: i64| format!("{}/v1/tasks/{task}{suffix}", server.url);
        let theirs = call(method, &url(their_task), Some(&mine), body.clone());
        let none = call(method, &url(no_task), Some(&mine), body.clone());
        assert_eq!(
            theirs.0, none.0,
            "{method} /v1/tasks/N{suffix}: {theirs:?} {none:?}"
        );
        assert_eq!(theirs.1["error"], none.1["error"], "{method} {suffix}");
        assert!(theirs.0 == 403 || theirs.0 == 404, "{theirs:?}");
    }
    // So do a batch that exists and one that does not, to a forged handle.
    let forged = |batch: i64| format!("qhb_{batch}_{}", "0".repeat(64));
    let batch_url = |batch: i64| format!("{}/v1/batches/{batch}", server.url);
    let existing = call("GET", &batch_url(theirs), Some(&forged(theirs)), None);
    let missing = call(
        "GET",
        &batch_url(theirs + 1000),
        Some(&forged(theirs + 1000)),
        None,
    );
    assert_eq!(existing, missing);
    assert_eq!(existing.0, 403, "{existing:?}");
    // The admin is told plainly.
    assert_eq!(
        call(
            "GET",
            &format!("{}/v1/tasks/{no_task}", server.url),
            Some(&server.token),
            None
        )
        .0,
        404
    );
    assert!(server.stop().success());
}

/// Lowers the soft limit on open files of the server to `soft` before it starts.
fn soft_open_file_limit(command: &mut Command, soft: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure only calls getrlimit and setrlimit, which are async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            limit.rlim_cur = soft.min(limit.rlim_max);
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[test]
fn many_silent_connections_do_not_keep_a_request_out() {
    let data = tempfile::tempdir().unwrap();
    // Started with a low soft limit on open files, as a login shell often gives: the
    // server raises it to what the hard limit allows.
    let server = Server::start_with(data.path(), 1, |command| {
        soft_open_file_limit(command, 256);
    });
    let silent: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(server.address()).unwrap())
        .collect();
    assert!(
        healthy_within(&server, Duration::from_secs(15)),
        "a request behind 300 silent connections was not answered"
    );
    drop(silent);
    assert!(server.stop().success());
}

#[test]
fn slow_and_idle_clients_are_disconnected() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), 1, |command| {
        command.args([
            "--client-timeout",
            "1s",
            "--header-timeout",
            "1s",
            "--max-connections",
            "20",
            "--max-connections-per-address",
            "20",
        ]);
    });
    let (batch, handle) = open(&server);

    // Headers sent a byte at a time, slower than the timeout allows in all.
    let mut dripping = TcpStream::connect(server.address()).unwrap();
    let request = format!("GET /v1/batches/{batch} HTTP/1.1\r\nHost: qhost\r\nX-Slow: ");
    dripping.write_all(request.as_bytes()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut closed = false;
    while Instant::now() < deadline {
        if dripping.write_all(b"a").is_err()
            || closed_within(&mut dripping, Duration::from_millis(200))
        {
            closed = true;
            break;
        }
    }
    assert!(
        closed,
        "a client sending its headers slowly kept its connection"
    );

    // A connection kept alive and left idle.
    let mut idle = TcpStream::connect(server.address()).unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: qhost\r\n\r\n")
        .unwrap();
    assert!(
        closed_within(&mut idle, Duration::from_secs(5)),
        "an idle connection stayed open"
    );

    // A body that stops coming.
    let mut stalled = TcpStream::connect(server.address()).unwrap();
    let head = format!(
        "POST /v1/batches/{batch}/tasks HTTP/1.1\r\nHost: qhost\r\n\
         Authorization: Bearer {handle}\r\nContent-Type: application/json\r\n\
         Content-Length: 1000\r\n\r\n{{\"tasks\": ["
    );
    stalled.write_all(head.as_bytes()).unwrap();
    assert!(
        closed_within(&mut stalled, Duration::from_secs(5)),
        "a stalled body kept its connection"
    );

    // Three times as many silent connections as the server takes at once: they are
    // dropped as they time out, and a request behind them is answered.
    let silent: Vec<TcpStream> = (0..60)
        .map(|_| TcpStream::connect(server.address()).unwrap())
        .collect();
    assert!(
        healthy_within(&server, Duration::from_secs(20)),
        "a request behind 60 silent connections was not answered"
    );
    drop(silent);
    assert!(server.stop().success());

    for (flag, value, setting) in [
        ("--max-connections", "0", "setting `max_connections`"),
        (
            "--max-connections",
            "100000000",
            "setting `max_connections`",
        ),
        ("--client-timeout", "0s", "setting `client_timeout`"),
        ("--client-timeout", "soon", "setting `client_timeout`"),
        ("--header-timeout", "0s", "setting `header_timeout`"),
        (
            "--max-connections-per-address",
            "0",
            "setting `max_connections_per_address`",
        ),
        ("--min-body-rate", "fast", "setting `min_body_rate`"),
        ("--max-long-requests", "0", "setting `max_long_requests`"),
        (
            "--max-long-requests-per-handle",
            "0",
            "setting `max_long_requests_per_handle`",
        ),
    ] {
        let mut command = serve_command(data.path(), 1);
        command.args([flag, value]);
        let stderr = refused(command);
        assert!(stderr.contains(setting), "{flag} {value}: {stderr}");
    }
}

/// A client that asks for a large answer and reads none of it is disconnected once the
/// buffers between are full, rather than hold its connection and the answer for ever.
#[test]
fn a_client_that_does_not_read_its_answer_is_disconnected() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), 2, |command| {
        command.args(["--client-timeout", "1s"]);
    });
    upload(
        &server,
        &std::fs::read(qhost_tests::guest("misbehave")).unwrap(),
        "misbehave",
    );
    let (batch, handle) = open(&server);
    // An output of 1,000,000 bytes.
    let url = format!("{}/v1/batches/{batch}/tasks", server.url);
    let (status, body) = call(
        "POST",
        &url,
        Some(&handle),
        Some(json!({"tasks": [{"module": "misbehave", "input": "output:1000000"}]})),
    );
    assert_eq!(status, 201, "{body}");
    let task = body["tasks"][0].as_i64().unwrap();
    call(
        "GET",
        &format!("{}/v1/batches/{batch}/wait?timeout=120s", server.url),
        Some(&handle),
        None,
    );
    let path = format!("/v1/tasks/{task}/output");
    // Twenty of them asked at once (pipelined): about 20 MB, more than the sockets'
    // buffers hold.
    let asks = 20;
    let size = asks * 1_000_000;
    let mut deaf = TcpStream::connect(server.address()).unwrap();
    let ask =
        format!("GET {path} HTTP/1.1\r\nHost: qhost\r\nAuthorization: Bearer {handle}\r\n\r\n");
    deaf.write_all(ask.repeat(asks).as_bytes()).unwrap();
    std::thread::sleep(Duration::from_secs(4)); // reading nothing, for a while
    let (received, ended) = drain(&mut deaf, Duration::from_secs(20));
    assert!(
        ended && received < size,
        "{received} of {size} bytes, ended: {ended}"
    );
    assert!(server.stop().success());
}

/// A node started twice by mistake (same database, same node name, same port): the second
/// fails to listen and exits, and must not have touched the queue first, where it would
/// have taken the first one's running attempts for its own lost ones.
#[test]
fn a_second_server_on_a_taken_port_leaves_the_queue_alone() {
    let db = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(qhost_tests::pg::TestDb::new());
    let data = tempfile::tempdir().unwrap();
    let first = Server::start_with(&data.path().join("first"), 1, |command| {
        command.args(["--db", &db.url]);
    });
    upload(
        &first,
        &std::fs::read(qhost_tests::guest("sleep")).unwrap(),
        "sleep",
    );
    let (batch, handle) = open(&first);
    let (status, body) = call(
        "POST",
        &format!("{}/v1/batches/{batch}/tasks", first.url),
        Some(&handle),
        Some(json!({"tasks": [
            {"module": "sleep", "input": "1500"},
            {"module": "sleep", "input": "10"},
        ]})),
    );
    assert_eq!(status, 201, "{body}");
    let running = body["tasks"][0].as_i64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, task) = call(
            "GET",
            &format!("{}/v1/tasks/{running}", first.url),
            Some(&handle),
            None,
        );
        if task["state"] == "running" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the first task never started: {task}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }

    let mut second = Command::new(qhost_tests::qhost_binary());
    second
        .args(["serve", "--listen", first.address(), "--db", &db.url])
        .arg("--data-dir")
        .arg(data.path().join("second"))
        .env_remove("QHOST_ADMIN_TOKEN")
        .env_remove("QHOST_CONFIG");
    let stderr = refused(second);
    assert!(stderr.contains(first.address()), "{stderr}");
    assert!(stderr.contains("in use"), "{stderr}");

    let (_, info) = call(
        "GET",
        &format!("{}/v1/batches/{batch}/wait?timeout=60s", first.url),
        Some(&handle),
        None,
    );
    assert_eq!(info["progress"]["succeeded"], 2, "{info}");
    let (_, log) = call(
        "GET",
        &format!("{}/v1/attempts?batch={batch}", first.url),
        Some(&handle),
        None,
    );
    let attempts = log["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "each task ran once: {log}");
    assert!(
        attempts.iter().all(|a| a["outcome"] == "succeeded"),
        "{log}"
    );
    let (_, nodes) = call(
        "GET",
        &format!("{}/v1/nodes", first.url),
        Some(&first.token),
        None,
    );
    assert_eq!(nodes.as_array().unwrap().len(), 1, "{nodes}");
    assert!(first.stop().success());
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_data_directory_and_its_secrets_are_private() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let server = Server::start(&data, 1);
    upload(
        &server,
        &std::fs::read(qhost_tests::guest("echo")).unwrap(),
        "echo",
    );
    assert!(server.stop().success());
    assert_eq!(mode(&data), 0o700, "the data directory");
    assert_eq!(mode(&data.join("qhost.db")), 0o600, "the database");
    assert_eq!(mode(&data.join("admin-token")), 0o600, "the admin token");
    assert_eq!(mode(&data.join("artifacts")), 0o700, "the artifact cache");
    assert_eq!(mode(&data.join("artifacts/key")), 0o600, "the artifact key");

    // A data directory others may write to is refused, by name and mode.
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o777)).unwrap();
    let stderr = refused(serve_command(&data, 1));
    assert!(stderr.contains(&data.display().to_string()), "{stderr}");
    assert!(stderr.contains("0777"), "{stderr}");
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();

    // So is a mount that would give tasks the data directory.
    let mut command = serve_command(&data, 1);
    command
        .arg("--mount")
        .arg(format!("all={}", root.path().display()));
    let stderr = refused(command);
    assert!(stderr.contains("setting `mounts`"), "{stderr}");

    // So is an empty admin token file.
    std::fs::write(data.join("admin-token"), "").unwrap();
    let stderr = refused(serve_command(&data, 1));
    assert!(stderr.contains("admin-token"), "{stderr}");
    assert!(stderr.contains("empty"), "{stderr}");
}

#[test]
fn retention_is_a_setting_and_bad_values_are_refused() {
    let data = tempfile::tempdir().unwrap();
    for value in ["7d", "12h", "off", "0"] {
        let server = Server::start_with(data.path(), 1, |command| {
            command.args(["--retention", value]);
        });
        assert!(server.stop().success(), "--retention {value}");
    }
    let server = Server::start_with(data.path(), 1, |command| {
        command.env("QHOST_RETENTION", "30d");
    });
    assert!(server.stop().success());

    for value in ["soon", "-1d", "7 parsecs", "10ms"] {
        let mut command = serve_command(data.path(), 1);
        command.arg(format!("--retention={value}"));
        let stderr = refused(command);
        assert!(
            stderr.contains("setting `retention`"),
            "--retention {value}: {stderr}"
        );
    }
    let config = data.path().join("qhost.toml");
    std::fs::write(&config, "retention = \"fortnightly\"\n").unwrap();
    let mut command = serve_command(data.path(), 1);
    command.arg("--config").arg(&config);
    let stderr = refused(command);
    assert!(stderr.contains("setting `retention`"), "{stderr}");
}

/// On PostgreSQL, where each node's upkeep runs every few seconds, a short retention shows
/// that the setting reaches the pruner: an ended task is gone soon after.
#[test]
fn ended_work_is_deleted_after_the_retention() {
    let db = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(qhost_tests::pg::TestDb::new());
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), 1, |command| {
        command.args(["--db", &db.url, "--retention", "1s"]);
    });
    upload(
        &server,
        &std::fs::read(qhost_tests::guest("echo")).unwrap(),
        "echo",
    );
    let (status, body) = call(
        "POST",
        &format!("{}/v1/tasks", server.url),
        Some(&server.token),
        Some(json!({"module": "echo", "input": "short-lived"})),
    );
    assert_eq!(status, 201, "{body}");
    let task = format!("{}/v1/tasks/{}", server.url, body["task"]);
    let (_, info) = call(
        "GET",
        &format!(
            "{}/v1/batches/{}/wait?timeout=60s",
            server.url, body["batch"]
        ),
        Some(&server.token),
        None,
    );
    assert_eq!(info["progress"]["succeeded"], 1, "{info}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, body) = call("GET", &task, Some(&server.token), None);
        if status == 404 {
            break;
        }
        assert_eq!(status, 200, "{body}");
        assert!(Instant::now() < deadline, "the ended task was kept: {body}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(server.stop().success());
}

#[test]
fn a_server_stopped_as_soon_as_it_listens_stops_gracefully() {
    let data = tempfile::tempdir().unwrap();
    for round in 0..10 {
        let server = Server::start(data.path(), 1);
        assert!(server.stop().success(), "round {round}: SIGTERM killed it");
    }
}

/// `/metrics` names groups: it answers the admin token or the metrics token, and anyone
/// only on a listen address of its own, which serves nothing else.
#[test]
fn metrics_need_a_token_unless_on_their_own_address() {
    let data = tempfile::tempdir().unwrap();
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let metrics_token = "metrics-token-for-the-scraper";
    let server = Server::start_with(data.path(), 1, |command| {
        command
            .args(["--metrics-listen", &format!("127.0.0.1:{port}")])
            .env("QHOST_METRICS_TOKEN", metrics_token);
    });
    let (_, handle) = open(&server);
    let metrics = format!("{}/metrics", server.url);
    for (credential, expected) in [
        (None, 401),
        (Some(handle.as_str()), 401),
        (Some("a-wrong-token-of-some-length"), 401),
        (Some(metrics_token), 200),
        (Some(server.token.as_str()), 200),
    ] {
        let (status, body) = call("GET", &metrics, credential, None);
        assert_eq!(status, expected, "{credential:?}: {body}");
    }
    let (status, _) = call(
        "GET",
        &format!("{}/v1/status", server.url),
        Some(metrics_token),
        None,
    );
    assert_eq!(status, 401, "the metrics token opens nothing else");
    let own = format!("http://127.0.0.1:{port}");
    let (status, body) = call("GET", &format!("{own}/metrics"), None, None);
    assert_eq!(status, 200, "{body}");
    assert!(body.as_str().unwrap().contains("qhost_tasks"), "{body}");
    let (status, _) = call(
        "GET",
        &format!("{own}/v1/status"),
        Some(&server.token),
        None,
    );
    assert_eq!(status, 404, "the metrics address serves metrics only");
    assert!(server.stop().success());
}
