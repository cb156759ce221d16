//! A task's cost in its group's rate, through `qhost serve` on SQLite and PostgreSQL: dear
//! tasks space their group's starts by their cost, read from the execution log; the task
//! view and the command line show and set it; a bad cost is refused naming the field, and
//! nothing of the refused submission is stored.

use qhost_tests::pg::TestDb;
use qhost_tests::server::{Server, call};
use serde_json::{Value, json};

fn admin(server: &Server, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    call(
        method,
        &format!("{}{path}", server.url),
        Some(&server.token),
        body,
    )
}

fn check(server: &Server) {
    server.upload("echo");
    let (status, body) = admin(
        server,
        "PUT",
        "/v1/groups/api",
        Some(json!({ "limit": 10, "rate": { "limit": 10, "period": "1s" } })),
    );
    assert_eq!(status, 200, "{body}");
    let costing = |cost: u32| json!({ "module": "echo", "group": "api", "cost": cost });

    // Refused, naming the field, and nothing stored.
    let tasks_before = admin(server, "GET", "/v1/tasks", None).1["tasks"]
        .as_array()
        .unwrap()
        .len();
    // Out of bounds: 400; not a whole number that fits at all: 422, as any body that does
    // not read.
    for (task, code, says) in [
        (costing(0), 400, "`cost` is 0"),
        (costing(1_000_001), 400, "1 to 1000000"),
        (json!({ "module": "echo", "cost": 2 }), 400, "has no group"),
        (
            json!({ "module": "echo", "group": "api", "cost": -1 }),
            422,
            "tasks[1].cost",
        ),
        (
            json!({ "module": "echo", "group": "api", "cost": "2" }),
            422,
            "tasks[1].cost",
        ),
    ] {
        let (status, body) = admin(
            server,
            "POST",
            "/v1/batches",
            Some(json!({ "tasks": [{ "module": "echo" }, task] })),
        );
        assert_eq!(status, code, "{task}: {body}");
        assert!(
            body["detail"].as_str().unwrap().contains(says),
            "{task}: {body}"
        );
    }
    let tasks_after = admin(server, "GET", "/v1/tasks", None).1["tasks"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(tasks_after, tasks_before, "a refused batch stores nothing");

    // A token every 100 ms, a burst of 1: tasks of cost 5 start 500 ms apart.
    let opened = server.open_batch(json!({ "tasks": [costing(5), costing(5), costing(1)] }));
    let (status, waited) = admin(
        server,
        "GET",
        &format!("/v1/batches/{}/wait?timeout=60s", opened.id),
        None,
    );
    assert_eq!(status, 200, "{waited}");
    assert_eq!(waited["progress"]["succeeded"], 3, "{waited}");
    let view = admin(
        server,
        "GET",
        &format!("/v1/tasks/{}", opened.tasks[0]),
        None,
    )
    .1;
    assert_eq!(view["cost"], 5, "{view}");
    let mut log = server.log();
    log.retain(|a| a.batch == opened.id);
    log.sort_by_key(|a| a.started_at);
    let order: Vec<i64> = log.iter().map(|a| a.task).collect();
    assert_eq!(order, opened.tasks, "claimed in submission order");
    for pair in log.windows(2) {
        // Each start follows the one before by its cost in tokens: 500 ms, less the few
        // milliseconds by which a start mark may follow its claim.
        let apart = pair[1].started_at - pair[0].started_at;
        assert!(
            apart >= 450_000,
            "task {} started {} ms after task {}, which costs 5 tokens of 10/s",
            pair[1].task,
            apart / 1000,
            pair[0].task
        );
    }

    // The command line sets a cost, and needs a group for it.
    let out = server.run(&[
        "submit", "--module", "echo", "--group", "api", "--cost", "3", "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let task = answer["task"].as_i64().unwrap();
    let view = admin(server, "GET", &format!("/v1/tasks/{task}"), None).1;
    assert_eq!(view["cost"], 3, "{view}");
    let out = server.run(&["submit", "--module", "echo", "--cost", "3"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--group"),
        "{out:?}"
    );
}

#[test]
fn a_tasks_cost_spaces_its_groups_starts_on_sqlite() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 2);
    check(&server);
    assert!(server.stop().success());
}

#[test]
fn a_tasks_cost_spaces_its_groups_starts_on_postgres() {
    let db = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(TestDb::new());
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with(data.path(), 2, |command| {
        command.args(["--db", &db.url]);
    });
    check(&server);
    assert!(server.stop().success());
}
