//! No client starves the others, through a real `qhost serve`: waits and event streams
//! bounded per handle with room kept for the admin; connections bounded in all and per
//! address, answered `503` past the cap rather than left waiting, with room for the admin
//! and `/healthz`; silent connections closed soon; uploads cut when they trickle, one
//! permit per handle, none for a small chunked body, one of the admin's own; and under
//! all of that at once, a well-behaved client served quickly and never with a 5xx.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use qhost_tests::server::{Opened, Server, call};
use serde_json::{Value, json};

/// A connection to `server` from the loopback address `from` (`127.0.0.2`): a client at
/// another address than the test's others.
fn connect_from(from: &str, server: &str) -> TcpStream {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    let runtime = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap()
    });
    let address = server.parse().unwrap();
    let from = format!("{from}:0").parse().unwrap();
    let stream = runtime.block_on(async move {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(from).unwrap();
        socket.connect(address).await.unwrap()
    });
    let stream = stream.into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    stream
}

/// Sends `request` (its line and headers; the blank line is added) and reads the answer's
/// status within `within`: `None` if none came, or the connection closed first.
fn ask(tcp: &mut TcpStream, request: &str, within: Duration) -> Option<u16> {
    tcp.write_all(format!("{request}\r\n\r\n").as_bytes())
        .ok()?;
    answer_status(tcp, within)
}

/// The status of the next answer on `tcp`, read within `within`.
fn answer_status(tcp: &mut TcpStream, within: Duration) -> Option<u16> {
    tcp.set_read_timeout(Some(within)).unwrap();
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        match tcp.read(&mut byte) {
            Ok(1) => line.push(byte[0]),
            _ => return None,
        }
    }
    let line = String::from_utf8_lossy(&line);
    line.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

/// A `GET` with `credential`, kept alive.
fn get(path: &str, credential: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: qhost\r\nAuthorization: Bearer {credential}")
}

/// Whether the server closes `tcp` within `within`.
fn closed_within(tcp: &mut TcpStream, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut buf = [0u8; 4096];
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        tcp.set_read_timeout(Some(left + Duration::from_millis(1)))
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

/// A batch that stays open: its one task is due in an hour.
fn open_batch(server: &Server) -> Opened {
    server.open_batch(json!({"tasks": [{"module": "echo", "input": "x", "delay": "1h"}]}))
}

#[test]
fn a_handle_holds_its_share_of_long_requests_and_the_admin_keeps_room() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    server.upload("echo");
    let mine = open_batch(&server);
    let theirs = open_batch(&server);
    let within = Duration::from_secs(10);
    let events = |batch: i64| format!("/v1/batches/{batch}/events");

    // The handle's first 16 streams are let in, and stay open (a wait would too, but
    // says nothing until it ends: streams show when they were let in).
    let held: Vec<TcpStream> = (0..16)
        .map(|_| {
            let mut tcp = TcpStream::connect(server.address()).unwrap();
            assert_eq!(
                ask(&mut tcp, &get(&events(mine.id), &mine.handle), within),
                Some(200)
            );
            tcp
        })
        .collect();
    // A 17th of either kind is refused at once.
    for path in [
        events(mine.id),
        format!("/v1/batches/{}/wait?timeout=5m", mine.id),
    ] {
        let mut tcp = TcpStream::connect(server.address()).unwrap();
        assert_eq!(
            ask(&mut tcp, &get(&path, &mine.handle), within),
            Some(429),
            "{path}"
        );
    }
    // Another handle, the admin and health probes are not held back.
    let mut tcp = TcpStream::connect(server.address()).unwrap();
    assert_eq!(
        ask(&mut tcp, &get(&events(theirs.id), &theirs.handle), within),
        Some(200)
    );
    let mut tcp = TcpStream::connect(server.address()).unwrap();
    assert_eq!(
        ask(&mut tcp, &get(&events(mine.id), &server.token), within),
        Some(200)
    );
    let (status, _) = call("GET", &format!("{}/healthz", server.url), None, None);
    assert_eq!(status, 200);
    drop(held);
    assert!(server.stop().success());
}

#[test]
fn past_the_connection_cap_others_are_answered_busy_and_the_admin_gets_in() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), 1, |command| {
        command.args([
            "--max-connections",
            "8",
            "--max-connections-per-address",
            "8",
        ]);
    });
    let opened = server.open_batch(json!({}));
    let within = Duration::from_secs(5);
    // Eight connections kept alive, each after a request: the server's cap.
    let held: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut tcp = TcpStream::connect(server.address()).unwrap();
            assert_eq!(ask(&mut tcp, &get("/healthz", "none"), within), Some(200));
            tcp
        })
        .collect();
    let asked = |request: &str| {
        let mut tcp = TcpStream::connect(server.address()).unwrap();
        ask(&mut tcp, request, within)
    };
    let status = format!("/v1/batches/{}", opened.id);
    assert_eq!(
        asked(&get(&status, &opened.handle)),
        Some(503),
        "a handle past the cap"
    );
    assert_eq!(
        asked(&get("/v1/status", &server.token)),
        Some(200),
        "the admin"
    );
    assert_eq!(asked(&get("/healthz", "none")), Some(200), "a probe");
    assert_eq!(
        asked(&get("/readyz", "none")),
        Some(200),
        "a readiness probe"
    );
    drop(held);
    assert!(server.stop().success());
}

#[test]
fn silent_connections_are_closed_soon_and_keep_no_probe_out() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), 1, |command| {
        command.args(["--max-connections", "20"]);
    });
    // A connection that sends nothing is closed within the head's deadline (5s).
    let mut silent = TcpStream::connect(server.address()).unwrap();
    assert!(
        closed_within(&mut silent, Duration::from_secs(8)),
        "a silent connection stayed open"
    );
    // Five times as many silent connections as the server takes, from another address:
    // a probe gets through at once, not once they time out.
    let silent: Vec<TcpStream> = (0..100)
        .map(|_| connect_from("127.0.0.2", server.address()))
        .collect();
    let started = Instant::now();
    let mut tcp = TcpStream::connect(server.address()).unwrap();
    assert_eq!(
        ask(&mut tcp, &get("/healthz", "none"), Duration::from_secs(10)),
        Some(200)
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "a probe behind 100 silent connections took {:?}",
        started.elapsed()
    );
    // Past their address's share, connections are answered 503 and closed.
    let mut refused = connect_from("127.0.0.2", server.address());
    let request = get("/v1/status", "no-token");
    assert_eq!(
        ask(&mut refused, &request, Duration::from_secs(5)),
        Some(503)
    );
    assert!(closed_within(&mut refused, Duration::from_secs(5)));
    drop(silent);
    assert!(server.stop().success());
}

/// Starts a submission of `length` bytes with `credential` and sends its first bytes: the
/// connection, to go on with.
fn start_upload(server: &Server, batch: i64, credential: &str, length: usize) -> TcpStream {
    let mut tcp = TcpStream::connect(server.address()).unwrap();
    let head = format!(
        "POST /v1/batches/{batch}/tasks HTTP/1.1\r\nHost: qhost\r\n\
         Authorization: Bearer {credential}\r\nContent-Type: application/json\r\n\
         Content-Length: {length}\r\n\r\n{{\"tasks\": ["
    );
    tcp.write_all(head.as_bytes()).unwrap();
    tcp
}

/// A submission of `count` echo tasks, each with an input of `size` bytes.
fn tasks(count: usize, size: usize) -> Value {
    let tasks: Vec<Value> = (0..count)
        .map(|_| json!({"module": "echo", "input": "x".repeat(size)}))
        .collect();
    json!({ "tasks": tasks })
}

#[test]
fn a_body_sent_a_byte_at_a_time_is_cut() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), 1, |command| {
        command.args(["--client-timeout", "1s", "--min-body-rate", "1KiB"]);
    });
    server.upload("echo");
    let opened = open_batch(&server);
    // A byte every 300ms never pauses for the client timeout, but is far below 1 KiB/s.
    let mut tcp = start_upload(&server, opened.id, &opened.handle, 100_000);
    let started = Instant::now();
    let mut cut = false;
    while started.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(300));
        if tcp.write_all(b" ").is_err() {
            cut = true;
            break;
        }
        tcp.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 64];
        let answered = !matches!(tcp.read(&mut buf), Err(e) if e.kind() == ErrorKind::WouldBlock);
        tcp.set_nonblocking(false).unwrap();
        if answered {
            cut = true;
            break;
        }
    }
    assert!(
        cut,
        "a body trickling a byte every 300ms was still read after {:?}",
        started.elapsed()
    );
    assert!(server.stop().success());
}

#[test]
fn one_handle_takes_one_upload_permit_and_a_small_chunked_body_none() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    server.upload("echo");
    let hostile = open_batch(&server);
    // Four large uploads of one handle, stalled after their first bytes: they would take
    // every shared permit if a handle could hold more than one.
    let stalled: Vec<TcpStream> = (0..4)
        .map(|_| start_upload(&server, hostile.id, &hostile.handle, 2 << 20))
        .collect();
    std::thread::sleep(Duration::from_millis(500)); // the server reads their heads
    let other = open_batch(&server);
    let started = Instant::now();
    let (status, body) = call(
        "POST",
        &format!("{}/v1/batches/{}/tasks", server.url, other.id),
        Some(&other.handle),
        Some(tasks(12, 100_000)),
    );
    assert_eq!(status, 201, "another handle's 1.2 MB submission: {body}");
    assert!(started.elapsed() < Duration::from_secs(10));
    drop(stalled);

    // Four handles each holding a shared permit: a small chunked body needs none, and
    // the admin has a permit of its own.
    let holders: Vec<(Opened, TcpStream)> = (0..4)
        .map(|_| {
            let opened = open_batch(&server);
            let tcp = start_upload(&server, opened.id, &opened.handle, 2 << 20);
            (opened, tcp)
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let mut chunked = TcpStream::connect(server.address()).unwrap();
    let body = tasks(1, 10).to_string();
    let request = format!(
        "POST /v1/batches/{}/tasks HTTP/1.1\r\nHost: qhost\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
        other.id,
        other.handle,
        body.len()
    );
    chunked.write_all(request.as_bytes()).unwrap();
    assert_eq!(
        answer_status(&mut chunked, Duration::from_secs(10)),
        Some(201),
        "a small chunked submission"
    );
    let started = Instant::now();
    let mut admin_body = tasks(12, 100_000);
    admin_body["name"] = json!("large");
    let (status, body) = call(
        "POST",
        &format!("{}/v1/batches", server.url),
        Some(&server.token),
        Some(admin_body),
    );
    assert_eq!(status, 201, "the admin's 1.2 MB opening: {body}");
    assert!(started.elapsed() < Duration::from_secs(10));
    drop(holders);
    assert!(server.stop().success());
}

/// The `p`th percentile of `sorted`.
fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() - 1) * p / 100]
}

/// One hostile client, from its own address and with one batch handle, holds every kind
/// of long request it can (event streams, waits, silent and dribbling connections,
/// trickled uploads) and keeps reopening them, while a well-behaved client submits,
/// waits and reads: it gets no 5xx, and its requests stay quick.
#[test]
fn a_hostile_client_does_not_slow_a_well_behaved_one() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), 2, |command| {
        command.args(["--max-connections", "400"]);
    });
    server.upload("echo");
    let hostile = Arc::new(open_batch(&server));
    let stop = Arc::new(AtomicBool::new(false));
    // Calls the attackers off however the test ends.
    struct CallOff(Arc<AtomicBool>);
    impl Drop for CallOff {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let _call_off = CallOff(stop.clone());
    let opened = Arc::new(AtomicUsize::new(0));
    let mut attackers = Vec::new();
    // Each attacker keeps `count` connections of its kind open, reopening what closes:
    // more than the server's 400 in all.
    let kinds: [(&str, usize); 5] = [
        ("events", 150),
        ("wait", 100),
        ("silent", 300),
        ("dribble", 50),
        ("upload", 8),
    ];
    for (kind, count) in kinds {
        let address = server.address().to_owned();
        let (hostile, stop) = (hostile.clone(), stop.clone());
        let opened = opened.clone();
        attackers.push(std::thread::spawn(move || {
            let open = |kind: &str| -> Option<TcpStream> {
                let mut tcp = connect_from("127.0.0.2", &address);
                let request = match kind {
                    "events" => format!(
                        "{}\r\n\r\n",
                        get(
                            &format!("/v1/batches/{}/events", hostile.id),
                            &hostile.handle
                        )
                    ),
                    "wait" => format!(
                        "{}\r\n\r\n",
                        get(
                            &format!("/v1/batches/{}/wait?timeout=5m", hostile.id),
                            &hostile.handle
                        )
                    ),
                    "dribble" => "GET /healthz HTTP/1.1\r\nX-Slow: ".to_owned(),
                    "upload" => format!(
                        "POST /v1/batches/{}/tasks HTTP/1.1\r\nHost: qhost\r\n\
                         Authorization: Bearer {}\r\nContent-Type: application/json\r\n\
                         Content-Length: {}\r\n\r\n{{\"tasks\": [",
                        hostile.id,
                        hostile.handle,
                        2 << 20
                    ),
                    _ => String::new(),
                };
                tcp.write_all(request.as_bytes()).ok()?;
                Some(tcp)
            };
            let mut held: Vec<TcpStream> = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                held.retain_mut(|tcp| {
                    // A byte now and then: headers and bodies that never end.
                    if matches!(kind, "dribble" | "upload") && tcp.write_all(b" ").is_err() {
                        return false;
                    }
                    tcp.set_nonblocking(true).unwrap();
                    let mut buf = [0u8; 4096];
                    let alive = match tcp.read(&mut buf) {
                        Ok(0) => false,
                        Ok(_) => true,
                        Err(e) => e.kind() == ErrorKind::WouldBlock,
                    };
                    tcp.set_nonblocking(false).unwrap();
                    alive
                });
                while held.len() < count {
                    opened.fetch_add(1, Ordering::Relaxed);
                    match open(kind) {
                        Some(tcp) => held.push(tcp),
                        None => break,
                    }
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }));
    }
    // The attack is under way once it opened more connections than the server takes.
    let deadline = Instant::now() + Duration::from_secs(30);
    while opened.load(Ordering::Relaxed) < 450 {
        assert!(Instant::now() < deadline, "the attack did not start");
        std::thread::sleep(Duration::from_millis(50));
    }

    let good = server.open_batch(json!({}));
    let url = |path: &str| format!("{}{path}", server.url);
    let mut quick = Vec::new();
    let mut waits = Vec::new();
    let mut failures = Vec::new();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        // Each round on a connection of its own, as each command of the CLI; a request
        // the server leaves waiting counts as failed after 5 seconds.
        let client: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(5)))
            .build()
            .into();
        let mut timed = |method: &str, path: &str, body: Option<Value>| -> (Duration, u16, Value) {
            let request = ureq::http::Request::builder()
                .method(method)
                .uri(url(path))
                .header("Authorization", format!("Bearer {}", good.handle));
            let at = Instant::now();
            let response = match body {
                Some(body) => client.run(
                    request
                        .header("content-type", "application/json")
                        .body(body.to_string())
                        .unwrap(),
                ),
                None => client.run(request.body(()).unwrap()),
            };
            let (status, text) = match response {
                Ok(mut response) => (
                    response.status().as_u16(),
                    response.body_mut().read_to_string().unwrap_or_default(),
                ),
                Err(err) => (599, err.to_string()),
            };
            let took = at.elapsed();
            if status >= 300 {
                failures.push(format!("{method} {path}: {status} {text}"));
            }
            (
                took,
                status,
                serde_json::from_str(&text).unwrap_or(Value::Null),
            )
        };
        let (took, _, submitted) = timed(
            "POST",
            &format!("/v1/batches/{}/tasks", good.id),
            Some(tasks(1, 10)),
        );
        quick.push(took);
        let Some(task) = submitted["tasks"][0].as_i64() else {
            continue;
        };
        let (took, _, _) = timed(
            "GET",
            &format!("/v1/batches/{}/wait?timeout=10s", good.id),
            None,
        );
        waits.push(took);
        for path in [
            format!("/v1/tasks/{task}"),
            format!("/v1/attempts?batch={}&limit=50", good.id),
            format!("/v1/batches/{}", good.id),
        ] {
            let (took, _, _) = timed("GET", &path, None);
            quick.push(took);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for attacker in attackers {
        attacker.join().unwrap();
    }
    quick.sort();
    waits.sort();
    let p50 = percentile(&quick, 50);
    let p99 = percentile(&quick, 99);
    eprintln!(
        "well-behaved client under attack: {} requests, p50 {p50:?}, p99 {p99:?}, max {:?}; \
         {} waits for its task, p50 {:?}, p99 {:?}",
        quick.len(),
        quick.last().unwrap(),
        waits.len(),
        percentile(&waits, 50),
        percentile(&waits, 99),
    );
    println!(
        "figure: fair-client-p99 = {:.3} ms",
        p99.as_secs_f64() * 1000.0
    );
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(quick.len() >= 40, "only {} requests in 10s", quick.len());
    // The target is 100 ms, and a run on a loaded 2-core machine gives about 10 ms: the
    // bound leaves room for a slower machine, not for a client kept waiting.
    assert!(p99 < Duration::from_millis(250), "p99 {p99:?}");
    assert!(server.stop().success());
}

/// The bytes of a captured field as the API gives it (`stdout`, or its base64 twin).
fn text_len(attempt: &Value, field: &str) -> usize {
    attempt[field].as_str().map_or(0, str::len)
}

#[test]
fn lists_and_views_cut_long_fields_and_an_attempts_route_gives_it_whole() {
    let data = tempfile::tempdir().unwrap();
    attempts_cut(Server::start(data.path(), 2));
}

#[test]
fn lists_and_views_cut_long_fields_on_postgres_too() {
    let data = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(qhost_tests::pg::TestDb::new());
    attempts_cut(Server::start_with(data.path(), 2, |command| {
        command.args(["--db", &db.url]);
    }));
}

/// Attempts with an error and a stdout of 60,000 bytes each, read in a list, a task's
/// view and whole, on `server`.
fn attempts_cut(server: Server) {
    server.upload("misbehave");
    let opened = server.open_batch(json!({"tasks": [
        {"module": "misbehave", "input": "error:60000", "max_attempts": 3, "backoff": "1ms"},
        {"module": "misbehave", "input": "stdout:60000"},
    ]}));
    let (status, waited) = call(
        "GET",
        &format!("{}/v1/batches/{}/wait?timeout=60s", server.url, opened.id),
        Some(&opened.handle),
        None,
    );
    assert_eq!(status, 200, "{waited}");
    let (failing, printing) = (opened.tasks[0], opened.tasks[1]);

    let (status, page) = call(
        "GET",
        &format!("{}/v1/attempts?batch={}&limit=10000", server.url, opened.id),
        Some(&opened.handle),
        None,
    );
    assert_eq!(status, 200, "{page}");
    let attempts = page["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 4, "{page:#}");
    for attempt in attempts {
        let (field, len) = if attempt["task"] == failing {
            ("error", text_len(attempt, "error"))
        } else {
            ("stdout", text_len(attempt, "stdout"))
        };
        assert!(len <= 1024, "{field}: {len} bytes in a list");
        assert_eq!(attempt["cut"], json!([field]), "{attempt:#}");
    }

    let (status, view) = call(
        "GET",
        &format!("{}/v1/tasks/{failing}", server.url),
        Some(&opened.handle),
        None,
    );
    assert_eq!(status, 200, "{view}");
    let error = view["error"].as_str().unwrap();
    assert!(
        error.len() < 4200 && error.ends_with(&format!("in GET /v1/tasks/{failing}/attempts/3]")),
        "a task's error in its view: {} bytes, ending {:?}",
        error.len(),
        &error[error.len().saturating_sub(80)..]
    );
    let log = view["log"].as_array().unwrap();
    assert_eq!(log.len(), 3);
    for attempt in log {
        assert!(text_len(attempt, "error") <= 4096, "a task's view");
        assert_eq!(attempt["cut"], json!(["error"]));
    }

    let (status, list) = call(
        "GET",
        &format!("{}/v1/tasks?batch={}", server.url, opened.id),
        Some(&opened.handle),
        None,
    );
    assert_eq!(status, 200, "{list}");
    let row = list["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == failing)
        .unwrap();
    let error = row["error"].as_str().unwrap();
    let (kept, mark) = error.split_once(" [cut: ").expect("a cut error is marked");
    assert!(
        kept.len() <= 1024,
        "a task's error in a list: {} bytes",
        kept.len()
    );
    assert_eq!(
        mark,
        format!(
            "{} bytes more in GET /v1/tasks/{failing}/attempts/3]",
            60_000 - kept.len()
        ),
        "the mark counts what the list did not read"
    );

    for (task, attempt, field) in [(failing, 3, "error"), (printing, 1, "stdout")] {
        let (status, whole) = call(
            "GET",
            &format!("{}/v1/tasks/{task}/attempts/{attempt}", server.url),
            Some(&opened.handle),
            None,
        );
        assert_eq!(status, 200, "{whole}");
        assert_eq!(text_len(&whole, field), 60_000, "{field} whole");
        assert_eq!(whole["cut"], json!([]), "{whole:#}");
    }
    let (status, _) = call(
        "GET",
        &format!("{}/v1/tasks/{failing}/attempts/4", server.url),
        Some(&opened.handle),
        None,
    );
    assert_eq!(status, 404, "an attempt that did not happen");
    let other = server.open_batch(json!({}));
    let (status, _) = call(
        "GET",
        &format!("{}/v1/tasks/{failing}/attempts/1", server.url),
        Some(&other.handle),
        None,
    );
    assert_eq!(status, 403, "another batch's handle");
    assert!(server.stop().success());
}
