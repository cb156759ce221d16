//! Readiness apart from liveness: `qhost serve` answers `/healthz` as soon as it listens,
//! and `/readyz` with `200` only once its store is migrated and the node registered;
//! before that `503 not-ready`, saying what is missing, and so does every other route.
//! The start is held at each step by a lock a test session keeps in PostgreSQL (the
//! migrations' advisory lock, then the table of nodes), so that "not ready yet" is seen
//! for certain, not by timing. `qhost health` is the probe a container runs.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use qhost_tests::pg::TestDb;
use qhost_tests::server::{Server, bare_cli, call};
use serde_json::{Value, json};

const TOKEN: &str = "ready-test-admin-token";

/// A free port on the loopback address: one the system gave, then let go.
fn free_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// `qhost serve` on `db` at `address`, not waited for.
fn spawn(db: &str, address: &str, data: &Path) -> Child {
    Command::new(qhost_tests::qhost_binary())
        .args(["serve", "--listen", address, "--workers", "1", "--db", db])
        .args(["--node", "ready-test", "--grace", "10s"])
        .arg("--data-dir")
        .arg(data)
        .env("QHOST_ADMIN_TOKEN", TOKEN)
        .env_remove("QHOST_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting qhost serve")
}

/// `GET path`: its status and body (JSON, or text as a string), or `None` while nothing
/// answers within 10 s.
fn get(address: &str, path: &str, token: Option<&str>) -> Option<(u16, Value)> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let mut request = agent.get(format!("http://{address}{path}"));
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    let mut response = request.call().ok()?;
    let text = response.body_mut().read_to_string().unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Some((response.status().as_u16(), body))
}

/// Asks `path` until `done` holds of the answer, within a minute; returns that answer.
fn poll(address: &str, path: &str, what: &str, done: impl Fn(u16, &Value) -> bool) -> (u16, Value) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let answer = get(address, path, None);
        if let Some((status, body)) = &answer
            && done(*status, body)
        {
            return (*status, body.clone());
        }
        assert!(
            Instant::now() < deadline,
            "{path}: {what} within a minute; last answer {answer:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `qhost health` against `address`: its exit code and stdout.
fn health(address: &str, ready: bool) -> (i32, String) {
    let mut command = bare_cli();
    command.args(["health", "--server", &format!("http://{address}")]);
    if ready {
        command.arg("--ready");
    }
    let output = command.output().expect("running qhost health");
    (
        output.status.code().expect("an exit code"),
        String::from_utf8_lossy(&output.stdout).trim().to_owned(),
    )
}

/// The server's answers while its start is held: alive, not ready, saying `missing`, and
/// refusing the API.
fn held_at(address: &str, missing: &str) {
    let (status, body) = poll(address, "/readyz", "to say what is missing", |_, body| {
        body["detail"].as_str().is_some_and(|d| d.contains(missing))
    });
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"], "not-ready", "{body}");
    assert_eq!(get(address, "/healthz", None).unwrap().0, 200);
    let (status, body) = get(address, "/v1/status", Some(TOKEN)).unwrap();
    assert_eq!((status, &body["error"]), (503, &json!("not-ready")));
    assert_eq!(health(address, false).0, 0, "alive");
    assert_eq!(health(address, true).0, 1, "not ready");
}

/// Waits for the line that says the server serves, then for `/readyz` to answer `200`.
fn serving(child: &mut Child, address: &str) {
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().expect("qhost serve printed nothing").unwrap();
    assert_eq!(first, format!("qhost listening on http://{address}"));
    let (status, body) = get(address, "/readyz", None).unwrap();
    assert_eq!((status, body), (200, json!("ready")));
    assert_eq!(health(address, true), (0, "ready".to_owned()));
}

fn stop(mut child: Child) {
    let killed = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "qhost serve stopped with {status}");
}

#[test]
fn ready_only_once_the_store_is_migrated_and_the_node_registered() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDb::new());
    let session = runtime.block_on(db.connect());
    let data = tempfile::tempdir().unwrap();
    let address = free_address();

    // Held before its migrations: the store is not open yet.
    runtime
        .block_on(session.execute(
            "SELECT pg_advisory_lock($1)",
            &[&qhost::store::postgres::MIGRATION_LOCK],
        ))
        .unwrap();
    let mut child = spawn(&db.url, &address, data.path());
    poll(&address, "/healthz", "to answer 200", |status, _| {
        status == 200
    });
    held_at(&address, "the store is not open and migrated yet");
    runtime
        .block_on(session.execute(
            "SELECT pg_advisory_unlock($1)",
            &[&qhost::store::postgres::MIGRATION_LOCK],
        ))
        .unwrap();
    serving(&mut child, &address);
    // Ready means it works: a task runs.
    let (status, body) = call(
        "POST",
        &format!("http://{address}/v1/tasks"),
        Some(TOKEN),
        Some(json!({"module": "missing", "input": "x"})),
    );
    assert_eq!(status, 400, "the API answers: {body}");
    stop(child);

    // Started again on the migrated store, held at its registration.
    runtime
        .block_on(session.batch_execute("BEGIN; LOCK TABLE nodes IN EXCLUSIVE MODE"))
        .unwrap();
    let mut child = spawn(&db.url, &address, data.path());
    held_at(&address, "this node is not registered yet");
    runtime.block_on(session.batch_execute("COMMIT")).unwrap();
    serving(&mut child, &address);
    let (status, nodes) = get(&address, "/v1/nodes", Some(TOKEN)).unwrap();
    assert_eq!(status, 200);
    assert_eq!(nodes[0]["node"], "ready-test", "{nodes}");
    stop(child);
}

#[test]
fn health_probes_a_sqlite_server_and_fails_once_it_is_gone() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    let address = server.address().to_owned();
    assert_eq!(health(&address, false), (0, "ok".to_owned()));
    assert_eq!(health(&address, true), (0, "ready".to_owned()));
    let (status, body) = call("GET", &format!("{}/readyz", server.url), None, None);
    assert_eq!((status, body), (200, json!("ready")));
    assert!(server.stop().success());
    let (code, _) = health(&address, false);
    assert_eq!(code, 1, "a server that is gone is not healthy");
}
