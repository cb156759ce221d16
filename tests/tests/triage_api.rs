//! What the dashboard's triage reads and does, through the API, on SQLite and PostgreSQL
//! alike: `GET /v1/groups` (idle groups too; a handle sees its batch's), a task's input,
//! a schedule's next ticks, and bulk actions on a filter's `state`, `module` and `tasks`
//! (the rows picked), each reaching exactly the tasks shown so.

use qhost_tests::pg::TestDb;
use qhost_tests::server::{Server, call};
use serde_json::{Value, json};

fn api(
    server: &Server,
    method: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    call(method, &format!("{}{path}", server.url), Some(token), body)
}

fn admin(server: &Server, method: &str, path: &str, body: Option<Value>) -> Value {
    let (status, answer) = api(server, method, path, &server.token, body);
    assert!(status < 300, "{method} {path}: {status} {answer}");
    answer
}

fn state(server: &Server, id: i64) -> Value {
    admin(server, "GET", &format!("/v1/tasks/{id}"), None)["state"].clone()
}

/// Everything this file checks, on `server`.
fn check(server: &Server) {
    server.upload("misbehave");
    let once = |input: &str| json!({ "module": "misbehave", "input": input, "max_attempts": 1 });

    // Groups: one set by hand and idle, one a batch names.
    admin(
        server,
        "PUT",
        "/v1/groups/idle",
        Some(json!({ "limit": 4 })),
    );
    let mut spec = once("ok");
    spec["group"] = json!("mine");
    let opened = server.open_batch(json!({ "max_parallel": 0, "tasks": [spec, once("ok")] }));
    let groups = admin(server, "GET", "/v1/groups", None);
    let keys: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["idle", "mine"], "{groups}");
    assert_eq!(
        groups["groups"][0],
        json!({ "key": "idle", "limit": 4, "paused": false, "rate": null, "running": 0 })
    );
    assert_eq!(groups["next_cursor"], Value::Null);
    let (status, page) = api(server, "GET", "/v1/groups?limit=1", &server.token, None);
    assert_eq!((status, page["next_cursor"].clone()), (200, json!("idle")));
    let (_, page) = api(
        server,
        "GET",
        "/v1/groups?limit=1&cursor=idle",
        &server.token,
        None,
    );
    assert_eq!(page["groups"][0]["key"], "mine");
    // A handle sees the groups its batch's tasks name, not the others.
    let (status, mine) = api(server, "GET", "/v1/groups", &opened.handle, None);
    assert_eq!(status, 200, "{mine}");
    assert_eq!(mine["groups"].as_array().unwrap().len(), 1, "{mine}");
    assert_eq!(mine["groups"][0]["key"], "mine");
    for bad in [
        "/v1/groups?limit=0",
        "/v1/groups?limit=501",
        "/v1/groups?colour=red",
    ] {
        let (status, refused) = api(server, "GET", bad, &server.token, None);
        assert_eq!(
            (status, refused["error"].clone()),
            (400, json!("bad-request")),
            "{bad}"
        );
    }

    // A task's input, as submitted.
    let input = qhost_tests::server::agent()
        .get(format!("{}/v1/tasks/{}/input", server.url, opened.tasks[0]))
        .header("Authorization", format!("Bearer {}", opened.handle))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    assert_eq!(input, "ok");

    // A schedule's next five ticks, at 09:00 in its zone (08:00 UTC in winter).
    admin(
        server,
        "POST",
        "/v1/schedules",
        Some(
            json!({ "name": "morning", "cron": "0 9 * * *", "timezone": "Europe/Berlin",
                     "plan": { "tasks": [once("ok")] } }),
        ),
    );
    let view = admin(server, "GET", "/v1/schedules/morning", None);
    let ticks = view["next_ticks"].as_array().unwrap();
    assert_eq!(ticks.len(), 5, "{view}");
    assert_eq!(ticks[0], view["next_due"]);
    for pair in ticks.windows(2) {
        let gap = pair[1].as_i64().unwrap() - pair[0].as_i64().unwrap();
        // A day, or a day less or more an hour across a change of clocks.
        assert!((23..=25).contains(&(gap / 3_600_000_000)), "{view}");
    }

    // Bulk actions by state: `held` reaches the held tasks, not a delayed (waiting) one.
    let delayed = server.open_batch(json!({ "tasks": [
        { "module": "misbehave", "input": "ok", "delay": "1h" }
    ] }));
    let cancelled = admin(
        server,
        "POST",
        "/v1/tasks/cancel?state=waiting&tasks=0",
        None,
    );
    assert_eq!(
        cancelled,
        json!({ "cancelled": 0, "stopping": 0 }),
        "no task 0"
    );
    let cancelled = admin(server, "POST", "/v1/tasks/cancel?state=held", None);
    assert_eq!(cancelled, json!({ "cancelled": 2, "stopping": 0 }));
    assert_eq!(state(server, delayed.tasks[0]), "waiting");
    // Retry by state alone: `cancelled` runs the cancelled ones again, picked by id.
    let picked = format!("/v1/tasks/retry?state=cancelled&tasks={}", opened.tasks[1]);
    assert_eq!(
        admin(server, "POST", &picked, None),
        json!({ "retried": 1 })
    );
    assert_eq!(state(server, opened.tasks[0]), "cancelled");
    assert_eq!(state(server, opened.tasks[1]), "held");
    // By module: a module of no task is refused, this one reaches the waiting task.
    let (status, refused) = api(
        server,
        "POST",
        "/v1/tasks/cancel?module=nothing",
        &server.token,
        None,
    );
    assert_eq!(
        (status, refused["error"].clone()),
        (404, json!("not-found")),
        "{refused}"
    );
    let cancelled = admin(
        server,
        "POST",
        "/v1/tasks/cancel?module=misbehave&state=waiting",
        None,
    );
    assert_eq!(cancelled, json!({ "cancelled": 1, "stopping": 0 }));
    assert_eq!(state(server, delayed.tasks[0]), "cancelled");
    assert_eq!(state(server, opened.tasks[1]), "held");
    for bad in ["state=gone", "tasks=x", "tasks=1,,2"] {
        let (status, refused) = api(
            server,
            "POST",
            &format!("/v1/tasks/cancel?{bad}"),
            &server.token,
            None,
        );
        assert_eq!(
            (status, refused["error"].clone()),
            (400, json!("bad-request")),
            "{bad}"
        );
    }
    // A handle's selection stays within its batch.
    let (status, none) = api(
        server,
        "POST",
        &format!("/v1/tasks/cancel?tasks={}", delayed.tasks[0]),
        &opened.handle,
        None,
    );
    assert_eq!(
        (status, none),
        (200, json!({ "cancelled": 0, "stopping": 0 }))
    );
}

#[test]
fn triage_reads_and_bulk_filters_on_sqlite() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    check(&server);
    assert!(server.stop().success());
}

#[test]
fn triage_reads_and_bulk_filters_on_postgres() {
    let db = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(TestDb::new());
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), 1, |command| {
        command.args(["--db", &db.url]);
    });
    check(&server);
    assert!(server.stop().success());
}
