//! Webhooks, end to end: a real `qhost serve` (SQLite, and PostgreSQL through
//! `QHOST_TEST_PG_URL`) posts a batch's end and a task's final failure to a receiver this
//! test runs on loopback, allowed with an explicit `--allow-http http://127.0.0.1:PORT`.
//! Each request's signature is checked here with SHA-256 alone (HMAC written out), as a
//! receiver in any language would check it.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use qhost_tests::hook_receiver::{HookReceiver, Received};
use qhost_tests::pg::TestDb;
use qhost_tests::server::{Opened, Server, call, refused, serve_command};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const SECRET: &str = "a-batch-secret-of-some-length";
const SERVER_SECRET: &str = "the-server-secret-0123456789";

/// HMAC-SHA256 (RFC 2104), from SHA-256 alone.
fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.iter().map(|b| b ^ byte).collect::<Vec<u8>>();
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .to_vec()
}

/// The request carries `Qhost-Signature: t=<unix>,v1=<hex>`: HMAC-SHA256 under `secret`
/// of `t`, `.` and the body, with `t` within five minutes of now.
fn assert_signed(request: &Received, secret: &str) {
    let header = request
        .header("Qhost-Signature")
        .unwrap_or_else(|| panic!("no signature: {request:?}"));
    let (t, v1) = header
        .split_once(',')
        .and_then(|(t, v1)| Some((t.strip_prefix("t=")?, v1.strip_prefix("v1=")?)))
        .unwrap_or_else(|| panic!("signature header `{header}`"));
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let t_secs: i64 = t.parse().unwrap();
    assert!((now - t_secs).abs() < 300, "signed at {t}, now {now}");
    let mut message = format!("{t}.").into_bytes();
    message.extend_from_slice(&request.body);
    assert_eq!(
        v1,
        hex::encode(hmac_sha256(secret.as_bytes(), &message)),
        "signature of {request:?}"
    );
    assert_ne!(
        v1,
        hex::encode(hmac_sha256(b"another secret entirely", &message))
    );
}

/// A server allowed to reach `receiver` (and nothing else), on `db` (SQLite in `data` when
/// none), with `misbehave` uploaded, and `extra` flags.
fn server(data: &Path, receiver: &HookReceiver, db: Option<&str>, extra: &[String]) -> Server {
    let server = Server::start_with(data, 2, |command| {
        command.arg("--allow-http").arg(receiver.origin());
        if let Some(db) = db {
            command.args(["--db", db]);
        }
        command.args(extra);
    });
    server.upload("misbehave");
    server
}

/// Opens a batch with its webhook at `receiver`'s `/hook` and `tasks`.
fn open(server: &Server, receiver: &HookReceiver, tasks: Value) -> Opened {
    server.open_batch(json!({
        "name": "hooked",
        "webhook": {"url": receiver.url("/hook"), "secret": SECRET},
        "tasks": tasks,
    }))
}

fn batch_ended_once_signed(db: Option<&str>) {
    let receiver = HookReceiver::start(0);
    let data = tempfile::tempdir().unwrap();
    let server = server(data.path(), &receiver, db, &[]);
    let batch = open(
        &server,
        &receiver,
        json!([{"module": "misbehave", "input": "ok"}, {"module": "misbehave", "input": "ok"}]),
    );
    let first = receiver.wait_for(1);
    let end = &first[0];
    assert_eq!((end.path.as_str(), end.status), ("/hook", 200));
    assert_eq!(end.header("Qhost-Event"), Some("batch.ended"));
    assert_eq!(end.header("content-type"), Some("application/json"));
    assert_signed(end, SECRET);
    let body = end.json();
    assert_eq!(body["type"], "batch.ended");
    assert_eq!(
        body["id"].to_string(),
        end.header("Qhost-Event-Id").unwrap()
    );
    assert_eq!(body["batch_id"], batch.id);
    assert_eq!(body["batch"]["progress"]["succeeded"], 2, "{body}");
    assert_eq!(body["batch"]["webhook"]["url"], receiver.url("/hook"));

    // The batch view shows the webhook's URL, never its secret.
    let (status, view) = call(
        "GET",
        &format!("{}/v1/batches/{}", server.url, batch.id),
        Some(&batch.handle),
        None,
    );
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["webhook"], json!({"url": receiver.url("/hook")}));
    assert!(!view.to_string().contains(SECRET), "{view}");

    // Once: a second batch's end comes next, and the first's is not sent again.
    let second = open(
        &server,
        &receiver,
        json!([{"module": "misbehave", "input": "ok"}]),
    );
    let all = receiver.wait_for(2);
    assert_eq!(all[1].json()["batch_id"], second.id);
    let ids: Vec<&str> = all
        .iter()
        .map(|r| r.header("Qhost-Event-Id").unwrap())
        .collect();
    assert_ne!(ids[0], ids[1]);
    assert_eq!(receiver.received().len(), 2, "{:?}", receiver.received());
}

#[test]
fn a_batch_end_is_posted_once_signed_sqlite() {
    batch_ended_once_signed(None);
}

#[test]
fn a_batch_end_is_posted_once_signed_postgres() {
    let db = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(TestDb::new());
    batch_ended_once_signed(Some(&db.url));
}

/// A task that fails for good is posted once (not at each failed attempt), to the batch's
/// webhook and to the server's, before its batch's end.
fn final_failure(db: Option<&str>) {
    let hook = HookReceiver::start(0);
    let server_hook = HookReceiver::start(0);
    let data = tempfile::tempdir().unwrap();
    let secret_file = data.path().join("webhook-secret");
    std::fs::write(&secret_file, format!("{SERVER_SECRET}\n")).unwrap();
    let flags = vec![
        "--allow-http".to_owned(),
        server_hook.origin(),
        "--webhook".to_owned(),
        server_hook.url("/all"),
        "--webhook-secret-file".to_owned(),
        secret_file.display().to_string(),
    ];
    let server = server(&data.path().join("data"), &hook, db, &flags);
    let batch = open(
        &server,
        &hook,
        json!([{"module": "misbehave", "input": "error", "max_attempts": 2, "backoff": "10ms"}]),
    );
    let task = batch.tasks[0];
    for (receiver, secret) in [(&hook, SECRET), (&server_hook, SERVER_SECRET)] {
        let mut got = receiver.wait_for(2);
        // Tries go out side by side: order them as written.
        got.sort_by_key(|r| r.header("Qhost-Event-Id").unwrap().parse::<i64>().unwrap());
        let kinds: Vec<&str> = got
            .iter()
            .map(|r| r.header("Qhost-Event").unwrap())
            .collect();
        assert_eq!(kinds, ["task.failed", "batch.ended"]);
        for request in &got {
            assert_signed(request, secret);
        }
        let failed = got[0].json();
        assert_eq!(failed["task_id"], task);
        assert_eq!(failed["batch_id"], batch.id);
        assert_eq!(failed["outcome"], "guest-error");
        assert!(
            failed["error"].as_str().unwrap().contains("asked to fail"),
            "{failed}"
        );
        assert_eq!(failed["task"]["state"], "failed");
        assert_eq!(failed["task"]["attempts"], 2, "{failed}");
        assert_eq!(got[1].json()["batch"]["progress"]["failed"], 1);
    }
    // A batch without a webhook of its own is heard by the server's alone.
    let plain = server.open_batch(json!({"tasks": [{"module": "misbehave", "input": "ok"}]}));
    let got = server_hook.wait_for(3);
    assert_eq!(got[2].json()["batch_id"], plain.id);
    assert_eq!(hook.received().len(), 2);
}

#[test]
fn a_final_failure_is_posted_sqlite() {
    final_failure(None);
}

#[test]
fn a_final_failure_is_posted_postgres() {
    let db = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(TestDb::new());
    final_failure(Some(&db.url));
}

#[test]
fn a_receiver_that_fails_twice_gets_the_event_on_the_third_try() {
    let receiver = HookReceiver::start(2);
    let data = tempfile::tempdir().unwrap();
    let server = server(data.path(), &receiver, None, &[]);
    open(
        &server,
        &receiver,
        json!([{"module": "misbehave", "input": "ok"}]),
    );
    let tries = receiver.wait_for(3);
    let statuses: Vec<u16> = tries.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [500, 500, 200]);
    let numbers: Vec<&str> = tries
        .iter()
        .map(|r| r.header("Qhost-Delivery-Try").unwrap())
        .collect();
    assert_eq!(numbers, ["1", "2", "3"]);
    for request in &tries {
        // The same event, the same bytes, each try signed anew.
        assert_eq!(
            request.header("Qhost-Event-Id"),
            tries[0].header("Qhost-Event-Id")
        );
        assert_eq!(request.body, tries[0].body);
        assert_signed(request, SECRET);
    }
}

#[test]
fn a_webhook_outside_the_allow_list_is_refused() {
    let receiver = HookReceiver::start(0);
    let data = tempfile::tempdir().unwrap();
    let server = server(data.path(), &receiver, None, &[]);
    let (status, body) = call(
        "POST",
        &format!("{}/v1/batches", server.url),
        Some(&server.token),
        Some(json!({
            "webhook": {"url": "http://127.0.0.1:9/hook", "secret": SECRET},
            "tasks": [{"module": "misbehave", "input": "ok"}],
        })),
    );
    assert_eq!(status, 400, "{body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.starts_with("field `webhook.url`: "), "{detail}");
    assert!(detail.contains("--allow-http"), "{detail}");
    let (status, body) = call(
        "POST",
        &format!("{}/v1/batches", server.url),
        Some(&server.token),
        Some(json!({"webhook": {"url": receiver.url("/hook"), "secret": "short"}})),
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("webhook.secret"),
        "{body}"
    );
    // Nothing was opened.
    let (_, list) = call(
        "GET",
        &format!("{}/v1/batches", server.url),
        Some(&server.token),
        None,
    );
    assert_eq!(list["batches"], json!([]), "{list}");

    // The server's own is checked at start.
    let other = tempfile::tempdir().unwrap();
    let secret_file = other.path().join("secret");
    std::fs::write(&secret_file, SERVER_SECRET).unwrap();
    let mut command = serve_command(&other.path().join("data"), 1);
    command
        .args(["--allow-http", &receiver.origin()])
        .args(["--webhook", "https://hooks.example.com/qhost"])
        .arg("--webhook-secret-file")
        .arg(&secret_file);
    let stderr = refused(command);
    assert!(stderr.contains("setting `webhook`"), "{stderr}");
    assert!(stderr.contains("hooks.example.com"), "{stderr}");
}

/// An event whose tries failed before a restart is delivered by the server started again.
fn pending_across_restart(db: Option<&str>) {
    let receiver = HookReceiver::start(usize::MAX);
    let data = tempfile::tempdir().unwrap();
    let first = server(data.path(), &receiver, db, &[]);
    open(
        &first,
        &receiver,
        json!([{"module": "misbehave", "input": "ok"}]),
    );
    let failed = receiver.wait_for(1);
    assert_eq!(failed[0].status, 500);
    assert!(first.stop().success());
    let after_stop = receiver.received().len();

    receiver.fail_next(0);
    let _again = server(data.path(), &receiver, db, &[]);
    let got = receiver.wait_for(after_stop + 1);
    let delivered = got.last().unwrap();
    assert_eq!(delivered.status, 200);
    assert_eq!(
        delivered.header("Qhost-Event-Id"),
        failed[0].header("Qhost-Event-Id")
    );
    assert_eq!(delivered.body, failed[0].body);
    assert_signed(delivered, SECRET);
}

#[test]
fn an_event_pending_across_a_restart_is_delivered_after_it_sqlite() {
    pending_across_restart(None);
}

#[test]
fn an_event_pending_across_a_restart_is_delivered_after_it_postgres() {
    let db = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(TestDb::new());
    pending_across_restart(Some(&db.url));
}

/// A plan's `[webhook]` gives the batch `qhost batch submit` opens its webhook, the secret
/// read from a file beside the plan; a plan with one is refused where it cannot apply.
#[test]
fn a_plans_webhook_hears_the_batch_it_opens() {
    let receiver = HookReceiver::start(0);
    let data = tempfile::tempdir().unwrap();
    let server = server(&data.path().join("data"), &receiver, None, &[]);
    let plans = data.path().join("plans");
    std::fs::create_dir_all(&plans).unwrap();
    std::fs::write(plans.join("hook-secret"), format!("{SECRET}\n")).unwrap();
    let plan = plans.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"planned\"\n\n[webhook]\nurl = \"{}\"\nsecret_file = \"hook-secret\"\n\n\
             [[task]]\nmodule = \"misbehave\"\ninput = \"ok\"\n",
            receiver.url("/plan")
        ),
    )
    .unwrap();
    let plan_arg = plan.to_str().unwrap();
    let output = server.run(&["batch", "submit", plan_arg, "--wait", "--json"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let got = receiver.wait_for(1);
    assert_eq!(got[0].path, "/plan");
    assert_eq!(got[0].header("Qhost-Event"), Some("batch.ended"));
    assert_eq!(got[0].json()["batch_id"], report["batch"]);
    assert_signed(&got[0], SECRET);

    // Into a batch already open, a webhook cannot be set; nor on a schedule's batches.
    let opened = server.open_batch(json!({}));
    let into = server.run(&[
        "batch",
        "submit",
        plan_arg,
        "--batch",
        &opened.id.to_string(),
    ]);
    assert_eq!(into.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&into.stderr).contains("[webhook]"));
    let scheduled = server.run(&[
        "schedule",
        "add",
        "nightly",
        "--cron",
        "0 2 * * *",
        "--plan",
        plan_arg,
    ]);
    assert_eq!(scheduled.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&scheduled.stderr).contains("[webhook]"));
}
