//! Lists against a real `qhost serve`: what a batch handle may list, what a task waits on
//! as the API shows it, refused parameters, and `qhost batch ls`, `qhost task ls` and the
//! bulk task commands on a filter.

use qhost_tests::server::{Server, call};
use serde_json::{Value, json};

/// Opens a batch that holds its tasks (`max_parallel` 0), with `tasks` echo tasks of
/// orders 0 and 1; returns its id, handle and task ids.
fn open(server: &Server, name: &str) -> (i64, String, Vec<i64>) {
    let opened = server.open_batch(json!({
        "name": name,
        "max_parallel": 0,
        "tasks": [
            {"module": "echo", "input": "a", "group": "g"},
            {"module": "echo", "input": "b", "order": 1},
        ],
    }));
    (opened.id, opened.handle, opened.tasks)
}

fn get(server: &Server, path: &str, token: &str) -> (u16, Value) {
    call("GET", &format!("{}{path}", server.url), Some(token), None)
}

#[test]
fn a_handle_lists_its_own_batch_and_sees_what_holds_its_tasks() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    server.upload("echo");
    let (a, handle, tasks) = open(&server, "first");
    let (b, _, _) = open(&server, "second");

    let (status, page) = get(&server, "/v1/batches", &server.token);
    assert_eq!(status, 200, "{page}");
    let ids: Vec<i64> = page["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [b, a], "the admin sees all, newest first");
    assert_eq!(page["batches"][0]["state"], "open");
    assert_eq!(page["batches"][0]["progress"]["held"], 1);
    assert_eq!(page["next_cursor"], Value::Null);

    let (status, own) = get(&server, "/v1/batches", &handle);
    assert_eq!(status, 200, "{own}");
    assert_eq!(own["batches"].as_array().unwrap().len(), 1);
    assert_eq!(
        own["batches"][0]["id"], a,
        "a handle sees its own batch only"
    );
    let (status, _) = get(&server, &format!("/v1/batches?batch={b}"), &handle);
    assert_eq!(status, 403, "another batch");
    let (status, _) = get(&server, &format!("/v1/tasks?batch={b}"), &handle);
    assert_eq!(status, 403, "another batch's tasks");
    let (status, unnamed) = get(&server, "/v1/tasks", &handle);
    assert_eq!(status, 200, "{unnamed}");

    let (status, page) = get(&server, &format!("/v1/tasks?batch={a}"), &handle);
    assert_eq!(status, 200, "{page}");
    assert_eq!(unnamed, page, "a handle that names no batch lists its own");
    let rows = page["tasks"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["id"], tasks[1], "newest first");
    assert_eq!(
        rows[0]["waiting_on"],
        json!({"kind": "gate", "order": 0, "open": 1})
    );
    assert_eq!(
        rows[1]["waiting_on"],
        json!({"kind": "batch", "max_parallel": 0, "running": 0})
    );
    assert_eq!(page["counts"]["waiting"], 1, "the gated one");
    assert_eq!(
        page["counts"]["held"], 1,
        "the one its batch's limit of 0 holds"
    );
    assert_eq!(page["counts_capped"], false);

    let (status, shown) = get(&server, &format!("/v1/tasks/{}", tasks[1]), &handle);
    assert_eq!(status, 200);
    assert_eq!(shown["waiting_on"]["kind"], "gate");

    for (query, names) in [
        ("state=bogus", "`state`"),
        ("state=ready&color=red", "`color`"),
        ("limit=0", "`limit`"),
        ("cursor=xyz", "`cursor`"),
        ("submitted_after=yesterday", "`submitted_after`"),
    ] {
        let (status, error) = get(&server, &format!("/v1/tasks?{query}"), &server.token);
        assert_eq!(status, 400, "{query}: {error}");
        assert!(
            error["detail"].as_str().unwrap().contains(names),
            "{query}: {error}"
        );
    }
    let (status, error) = get(&server, "/v1/tasks?module=nosuchmodule", &server.token);
    assert_eq!(status, 404, "{error}");
    assert!(error["detail"].as_str().unwrap().contains("`module`"));
    let (status, page) = get(
        &server,
        "/v1/tasks?state=waiting,held&state=ready,running&module=echo",
        &server.token,
    );
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["tasks"].as_array().unwrap().len(), 4);
    assert!(server.stop().success());
}

#[test]
fn the_command_line_lists_pages_and_acts_on_a_filter() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    server.upload("echo");
    let (a, _, tasks) = open(&server, "first");
    let (b, _, _) = open(&server, "second");
    let run = |args: &[&str]| {
        let output = server.run(args);
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let errors = String::from_utf8_lossy(&output.stderr).into_owned();
        (output.status.success(), text, errors)
    };

    let (ok, listed, errors) = run(&["batch", "ls", "-n", "1"]);
    assert!(ok, "{errors}");
    assert!(
        listed.contains("second") && !listed.contains("first"),
        "{listed}"
    );
    let cursor = listed
        .lines()
        .find_map(|l| l.strip_prefix("more: --cursor "))
        .unwrap_or_else(|| panic!("a hint for the next page: {listed}"));
    let (ok, rest, errors) = run(&["batch", "ls", "-n", "1", "--cursor", cursor]);
    assert!(ok, "{errors}");
    assert!(rest.contains("first") && !rest.contains("more:"), "{rest}");
    let (_, recent, _) = run(&["batch", "ls", "--since", "1h"]);
    assert!(
        recent.contains("first") && recent.contains("second"),
        "{recent}"
    );
    let (_, named, _) = run(&["batch", "ls", "--name", "first", "--state", "open"]);
    assert!(
        named.contains("first") && !named.contains("second"),
        "{named}"
    );

    let a_text = a.to_string();
    let (ok, listed, errors) = run(&["task", "ls", "--batch", &a_text, "--state", "waiting,held"]);
    assert!(ok, "{errors}");
    assert!(
        listed.contains("gate: order 0 has 1 open") && listed.contains("batch: 0 of 0 running"),
        "{listed}"
    );
    assert!(listed.contains("1 waiting, 0 ready, 1 held"), "{listed}");

    let (ok, listed, errors) = run(&["task", "ls", "--since", "1h", "--json"]);
    assert!(ok, "{errors}");
    let page: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(page["tasks"].as_array().unwrap().len(), 4, "{page}");
    let (ok, listed, errors) = run(&["task", "ls", "--until", "1h", "--json"]);
    assert!(ok, "{errors}");
    let page: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(page["tasks"], json!([]), "{page}");
    let (ok, _, errors) = run(&["task", "ls", "--since", "yesterday"]);
    assert!(!ok);
    assert!(errors.contains("--since"), "{errors}");

    let (ok, _, errors) = run(&["task", "cancel"]);
    assert!(!ok);
    assert!(errors.contains("name a task or a filter"), "{errors}");
    let first = tasks[0].to_string();
    let (ok, changed, errors) = run(&["task", "priority", &first, "-3"]);
    assert!(ok, "{errors}");
    assert!(changed.contains("priority -3"), "{changed}");
    let (ok, changed, errors) = run(&["task", "priority", "7", "--batch", &a_text]);
    assert!(ok, "{errors}");
    assert!(changed.contains("2 tasks now at priority 7"), "{changed}");
    let (ok, cancelled, errors) = run(&["task", "cancel", "--batch", &b.to_string()]);
    assert!(ok, "{errors}");
    assert!(cancelled.contains("2 tasks cancelled"), "{cancelled}");
    let (_, listed, _) = run(&["task", "ls", "--state", "cancelled", "--json"]);
    let page: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(page["counts"]["cancelled"], 2, "{page}");
    assert!(server.stop().success());
}

/// Measures, not a check (`cargo test -p qhost-tests --test lists -- --ignored
/// --nocapture`): fills a SQLite store with 1,000,000 tasks in 1,000 batches, by SQL, then
/// times the first page of each list filter through the API (median of 5) and prints it.
/// A tenth of the batches hold their pending tasks (`max_parallel` 0) so that nothing
/// runs meanwhile; the others have ended (94% succeeded, 5% `trap`, 1% cancelled).
#[test]
#[ignore]
fn a_million_tasks_list_page_by_page() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    server.upload("echo");
    let echo = {
        let (_, modules) = get(&server, "/v1/modules", &server.token);
        modules[0]["digest"].as_str().unwrap().to_owned()
    };
    assert!(server.stop().success());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64;
    let t0 = now - 2_000_000_000;
    let filled = std::time::Instant::now();
    let db = rusqlite::Connection::open(data.path().join("qhost.db")).unwrap();
    db.execute_batch(&format!(
        "BEGIN;
         WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999)
         INSERT INTO batches (id, handle_hash, name, priority, max_parallel, halt_on_failure,
             sealed, created_at)
         SELECT 100 + i, randomblob(32), 'nightly-' || (i % 50), 0,
                CASE WHEN i % 10 = 0 THEN 0 END, 0, i % 10 != 0, {t0} + i * 1000000
         FROM n;
         WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999999),
         s(i, pending, state) AS (
             SELECT i, (i / 1000) % 10 = 0,
                    CASE WHEN (i / 1000) % 10 = 0 THEN 1 - i % 2
                         WHEN i % 100 < 5 THEN 4 WHEN i % 100 = 5 THEN 5 ELSE 3 END
             FROM n)
         INSERT INTO tasks (batch_id, module, input, ord, group_key, priority, vseq, state,
             attempts, max_attempts, backoff_ms, limits, mounts, not_before, submitted_at,
             ended_at, outcome)
         SELECT 100 + i / 1000, CASE WHEN i % 2 = 0 THEN '{echo}' ELSE '{other}' END, x'',
                CASE WHEN state = 0 THEN 1 ELSE 0 END,
                CASE WHEN i % 10 = 0 THEN 'g' || (i % 100) END, 0, i, state,
                NOT pending, 1, 1000, '{{}}', '[]', 0, {t0} + (i / 1000) * 1000000 + i % 1000,
                CASE WHEN NOT pending THEN {t0} + (i / 1000) * 1000000 + 500000 END,
                CASE state WHEN 3 THEN 'succeeded' WHEN 4 THEN 'trap'
                           WHEN 5 THEN 'cancelled' END
         FROM s;
         INSERT INTO batch_orders (batch_id, ord, open)
         SELECT batch_id, ord, COUNT(*) FROM tasks WHERE state < 3 GROUP BY 1, 2;
         INSERT OR IGNORE INTO groups (key)
         SELECT DISTINCT group_key FROM tasks WHERE group_key IS NOT NULL;
         COMMIT;",
        other = "f".repeat(64),
    ))
    .unwrap();
    drop(db);
    println!("filled 1,000,000 tasks in {:.1?}", filled.elapsed());

    let server = Server::start(data.path(), 1);
    // The last ten batches' creation, the last tenth's submissions.
    let at = (t0 + 990_000_000) / 1_000_000;
    let output = std::process::Command::new("date")
        .args(["-u", "-d", &format!("@{at}"), "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .unwrap();
    let recent = String::from_utf8(output.stdout).unwrap().trim().to_owned();
    let batches_recent = format!("/v1/batches?created_after={recent}");
    let tasks_recent = format!("/v1/tasks?submitted_after={recent}");
    let filters = [
        "/v1/batches",
        "/v1/batches?name=nightly-7",
        "/v1/batches?state=open",
        "/v1/batches?state=ended",
        batches_recent.as_str(),
        "/v1/tasks",
        "/v1/tasks?batch=600",
        "/v1/tasks?batch=600&state=failed",
        "/v1/tasks?state=waiting",
        "/v1/tasks?state=ready",
        "/v1/tasks?state=held",
        "/v1/tasks?state=succeeded",
        "/v1/tasks?state=failed",
        "/v1/tasks?state=cancelled",
        "/v1/tasks?group=g10",
        "/v1/tasks?module=echo",
        "/v1/tasks?outcome=trap",
        tasks_recent.as_str(),
        "/v1/tasks?submitted_before=2020-01-01T00:00:00Z",
    ];
    for path in filters {
        let mut times = Vec::new();
        let mut rows = 0;
        for _ in 0..6 {
            let started = std::time::Instant::now();
            let (status, page) = get(&server, path, &server.token);
            times.push(started.elapsed());
            assert_eq!(status, 200, "{path}: {page}");
            rows = page["tasks"]
                .as_array()
                .or(page["batches"].as_array())
                .map_or(0, Vec::len);
        }
        // The first read warms the cache.
        times.remove(0);
        times.sort();
        println!("{path:<55} {rows:>3} rows  {:>7.1?}", times[2]);
    }
    assert!(server.stop().success());
}
