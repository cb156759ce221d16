//! Backups of a running node (`qhost backup`, `GET /v1/backup`): a copy made while tasks
//! run and submissions arrive holds every task acknowledged before it began, and a node
//! started on the copy runs them all; one backup at a time, for the admin only; a
//! PostgreSQL store is refused with `pg_dump` named.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use qhost_tests::pg::TestDb;
use qhost_tests::server::{Server, call};
use serde_json::{Value, json};

/// Polls `check` until it holds, for at most a minute.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check() {
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within a minute"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every task id the server at `url` lists, page by page.
fn listed_tasks(url: &str, token: &str) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = match &cursor {
            Some(c) => format!("{url}/v1/tasks?limit=500&cursor={c}"),
            None => format!("{url}/v1/tasks?limit=500"),
        };
        let (status, body) = call("GET", &page, Some(token), None);
        assert_eq!(status, 200, "{body}");
        ids.extend(
            body["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["id"].as_i64().unwrap()),
        );
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return ids,
        }
    }
}

#[test]
fn a_backup_made_while_tasks_run_holds_every_acknowledged_task() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("live"), 2);
    server.upload("sleep");
    let first = server.open_batch(json!({
        "tasks": (0..40).map(|_| json!({"module": "sleep", "input": "30"})).collect::<Vec<_>>(),
    }));

    // Submissions go on, one task each, while the backup is made: those acknowledged
    // before it was asked for must be in it.
    let asked = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let (acked, acks) = mpsc::channel::<(i64, bool)>();
    let submitter = {
        let (url, token) = (server.url.clone(), server.token.clone());
        let (asked, stop) = (asked.clone(), stop.clone());
        let batch = first.id;
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let (status, body) = call(
                    "POST",
                    &format!("{url}/v1/batches/{batch}/tasks"),
                    Some(&token),
                    Some(json!({"tasks": [{"module": "sleep", "input": "1"}]})),
                );
                assert!(status < 300, "{status} {body}");
                let id = body["tasks"][0].as_i64().unwrap();
                // Read after the answer came: false means the backup was not asked yet.
                let before = !asked.load(Ordering::SeqCst);
                if acked.send((id, before)).is_err() {
                    return;
                }
            }
        })
    };
    for _ in 0..5 {
        acks.recv_timeout(Duration::from_secs(60))
            .expect("a submission acknowledged");
    }
    eventually("a task running", || {
        let (_, running) = call(
            "GET",
            &format!("{}/v1/running", server.url),
            Some(&server.token),
            None,
        );
        running.as_array().is_some_and(|r| !r.is_empty())
    });

    let copy = dir.path().join("copy").join("qhost.db");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    asked.store(true, Ordering::SeqCst);
    let output = server.run(&["backup", "--out", copy.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "qhost backup: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("backed up the store"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    stop.store(true, Ordering::SeqCst);
    submitter.join().unwrap();
    let mut acknowledged = first.tasks.clone();
    acknowledged.extend(
        acks.try_iter()
            .filter(|(_, before)| *before)
            .map(|(id, _)| id),
    );

    // Nothing is left beside the live database.
    let left: Vec<String> = std::fs::read_dir(dir.path().join("live"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.contains("backup"))
        .collect();
    assert!(left.is_empty(), "left in the data directory: {left:?}");

    // The live node goes on; a node started on the copy knows every task acknowledged
    // before the backup, and runs them all to the end.
    drop(server);
    let restored = Server::start(copy.parent().unwrap(), 2);
    let listed = listed_tasks(&restored.url, &restored.token);
    let missing: Vec<&i64> = acknowledged
        .iter()
        .filter(|id| !listed.contains(id))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged tasks are not in the copy: {missing:?}",
        missing.len(),
        acknowledged.len()
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (_, info) = call(
            "GET",
            &format!("{}/v1/batches/{}/wait?timeout=10s", restored.url, first.id),
            Some(&restored.token),
            None,
        );
        let progress = &info["progress"];
        let total: u64 = progress
            .as_object()
            .unwrap()
            .values()
            .map(|n| n.as_u64().unwrap())
            .sum();
        if progress["succeeded"].as_u64() == Some(total) {
            assert!(total as usize >= acknowledged.len(), "{info}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the copy's batch did not end within 2 minutes: {info}"
        );
    }
}

/// Reads an answer's status line and headers, and leaves its body unread.
fn head_only(server: &Server, path: &str) -> (TcpStream, String) {
    let mut stream = TcpStream::connect(server.address()).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\r\n",
        server.token
    )
    .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
    }
    (stream, status)
}

#[test]
fn one_backup_at_a_time_for_the_admin_alone() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("live"), 1);
    server.upload("sleep");
    // A store far larger than the sockets' buffers: a download nobody reads stays open.
    let big = "0".repeat(4 << 20);
    let opened = server.open_batch(json!({}));
    for _ in 0..4 {
        let tasks: Vec<Value> = (0..3)
            .map(|_| json!({"module": "sleep", "input": big, "delay": "1h"}))
            .collect();
        let (status, body) = call(
            "POST",
            &format!("{}/v1/batches/{}/tasks", server.url, opened.id),
            Some(&server.token),
            Some(json!({ "tasks": tasks })),
        );
        assert!(status < 300, "{status} {body}");
    }

    let (status, body) = call(
        "GET",
        &format!("{}/v1/backup", server.url),
        Some(&opened.handle),
        None,
    );
    assert_eq!(status, 403, "a batch handle backs up the store: {body}");

    let (stalled, status) = head_only(&server, "/v1/backup");
    assert!(status.contains(" 200 "), "{status}");
    let out = dir.path().join("second.db");
    let second = server.run(&["backup", "--out", out.to_str().unwrap()]);
    assert_eq!(second.status.code(), Some(6), "a second backup at once");
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(said.contains("one at a time"), "{said}");
    assert!(!out.exists(), "a refused backup left {}", out.display());

    // The first ends when its reader goes away; then the next is made.
    drop(stalled);
    eventually("a backup once the first was dropped", || {
        server
            .run(&["backup", "--out", out.to_str().unwrap()])
            .status
            .success()
    });
    let copy = rusqlite::Connection::open(&out).unwrap();
    let tasks: i64 = copy
        .query_row("SELECT count(*) FROM tasks", [], |row| row.get(0))
        .unwrap();
    assert_eq!(tasks, 12);

    let again = server.run(&["backup", "--out", out.to_str().unwrap()]);
    assert_eq!(
        again.status.code(),
        Some(2),
        "--out names a file that exists"
    );
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists"));
}

#[test]
fn a_postgres_store_is_left_to_pg_dump() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDb::new());
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with(dir.path(), 1, |command| {
        command.args(["--db", &db.url]);
    });
    let out = dir.path().join("copy.db");
    let output = server.run(&["backup", "--out", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(5), "409 is a conflict");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("pg_dump"), "{said}");
    assert!(!out.exists());
}
