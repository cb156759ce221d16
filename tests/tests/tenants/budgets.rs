//! CPU budgets through a real `qhost serve`: the task that crosses its tenant's budget ends
//! `budget`, the tenant's tasks not started wait for the next window while the other
//! tenants' run on every slot, and lifting the budget lets them go at once.

use super::*;

/// A's budget: 200 ms of CPU per window. The window is long, so that no test run meets
/// its end.
const BUDGET_MICROS: i64 = 200_000;

/// Tenant A's spinner uses its 200 ms and ends `budget`; A's echo tasks submitted after
/// wait, while B's sleepers, submitted after them, all run two at a time on the two
/// slots; with the budget lifted, A's tasks run at once.
pub(super) fn a_tenant_at_its_cpu_budget_stops_and_the_others_run_on(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let t = Tenants::start_slots(data.path(), db, 2, &[]);
    t.server.upload("misbehave");
    t.server.upload("sleep");
    let budget = json!({"cpu": "200ms", "period": "366d"});
    let (status, set) = admin(
        &t.server,
        "PATCH",
        "/v1/tenants/a",
        json!({ "cpu_budget": budget }),
    );
    assert_eq!(status, 200, "{set}");
    // The period as humantime writes it back: `1year 18h`.
    let period = set["cpu_budget"]["period"].as_str().unwrap_or_default();
    assert_eq!(
        qhost::units::parse_duration(period).ok(),
        Some(Duration::from_secs(366 * 86_400)),
        "{set}"
    );
    assert_eq!(
        (
            &set["cpu_budget"]["cpu"],
            &set["budget_used_micros"],
            &set["held_until"]
        ),
        (&json!("200ms"), &json!(0), &Value::Null),
        "{set}"
    );
    let open = |token: &str, tasks: Value| {
        let (status, opened) = call(
            "POST",
            &t.url("/v1/batches"),
            Some(token),
            Some(json!({ "tasks": tasks })),
        );
        assert_eq!(status, 201, "{opened}");
        opened["batch"]["id"].as_i64().unwrap()
    };
    let spin =
        json!([{"module": "misbehave", "input": "spin", "timeout": "60s", "max_attempts": 1}]);
    let spinner = open(&t.a, spin);
    wait_ended(&t.server, spinner);
    let crossed = attempts_of(&t.server, spinner);
    assert_eq!(crossed.len(), 1, "the spinner ran once");
    assert_eq!(
        crossed[0].outcome,
        qhost::runtime::Outcome::Budget,
        "{crossed:?}"
    );
    let cpu = crossed[0].cpu_micros.expect("a run measures its CPU time");
    assert!(
        (BUDGET_MICROS..2 * BUDGET_MICROS).contains(&cpu),
        "the spinner used {cpu} µs of a {BUDGET_MICROS} µs budget"
    );

    // A is held: its tasks wait, B's run on both slots.
    let echoes = json!([{"module": "echo", "input": "1"}, {"module": "echo", "input": "2"}]);
    let held = open(&t.a, echoes);
    let sleepers_of_b = open(&t.b, sleepers(4, 300));
    wait_ended(&t.server, sleepers_of_b);
    assert_eq!(
        peak_overlap(&spans_of(&t.server, sleepers_of_b)),
        2,
        "a slot idled while B's work waited"
    );
    assert!(
        attempts_of(&t.server, held).is_empty(),
        "A's tasks started past its budget"
    );
    let listed = call(
        "GET",
        &t.url(&format!("/v1/tasks?batch={held}")),
        Some(&t.a),
        None,
    )
    .1;
    for task in listed["tasks"].as_array().unwrap() {
        assert_eq!(
            (
                &task["state"],
                &task["waiting_on"]["kind"],
                &task["waiting_on"]["tenant"]
            ),
            (&json!("ready"), &json!("budget"), &json!("a")),
            "{task}"
        );
    }
    let usage = call("GET", &t.url("/v1/usage"), Some(&t.a), None).1;
    let a = &usage["tenants"][0];
    assert_eq!(a["budget_used_micros"], cpu, "{a}");
    assert!(a["held_until"].as_i64().is_some(), "{a}");

    // Lifted: they run at once.
    let (status, set) = admin(
        &t.server,
        "PATCH",
        "/v1/tenants/a",
        json!({ "cpu_budget": null }),
    );
    assert_eq!((status, &set["held_until"]), (200, &Value::Null), "{set}");
    wait_ended(&t.server, held);
    let ran = attempts_of(&t.server, held);
    assert!(
        ran.len() == 2 && ran.iter().all(|a| a.outcome.is_success()),
        "{ran:?}"
    );
}

/// A budget out of bounds is refused naming its field; A keeps none.
pub(super) fn a_cpu_budget_out_of_bounds_is_refused(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let t = Tenants::start(data.path(), db);
    for (bad, field) in [
        (json!({"cpu": "2h", "period": "1h"}), "cpu_budget.cpu"),
        (json!({"cpu": "1s", "period": "500ms"}), "cpu_budget.period"),
        (json!({"cpu": "soon", "period": "1h"}), "soon"),
        (json!({"cpu": "1s"}), "period"),
    ] {
        let (status, refused) = admin(
            &t.server,
            "PATCH",
            "/v1/tenants/a",
            json!({ "cpu_budget": bad }),
        );
        assert_eq!(status, 400, "{bad}: {refused}");
        assert!(refused.to_string().contains(field), "{bad}: {refused}");
    }
    let (_, list) = call("GET", &t.url("/v1/tenants"), Some(&t.server.token), None);
    assert_eq!(list["tenants"][0]["cpu_budget"], Value::Null, "{list}");
}

/// A tenant added gets the server's `--tenant-cpu-budget`; one the server refuses names the
/// flag.
pub(super) fn a_new_tenant_gets_the_servers_cpu_budget(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let t = Tenants::start_with(data.path(), db, &["--tenant-cpu-budget", "10s/1h"]);
    let (_, list) = call("GET", &t.url("/v1/tenants"), Some(&t.server.token), None);
    for tenant in list["tenants"].as_array().unwrap() {
        assert_eq!(
            tenant["cpu_budget"],
            json!({"cpu": "10s", "period": "1h"}),
            "{tenant}"
        );
    }
    let refused = std::process::Command::new(qhost_tests::qhost_binary())
        .args(["serve", "--tenant-cpu-budget", "10s"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && said.contains("--tenant-cpu-budget"),
        "{said}"
    );
}

/// On two nodes sharing PostgreSQL, a tenant held on one is held on both: A's spinner ends
/// `budget` on whichever node ran it, A's tasks submitted after start on neither while the
/// admin's run on all four slots, and lifting the budget through the other node lets them
/// go.
#[test]
fn a_tenants_cpu_budget_holds_across_nodes() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDb::new());
    let data = tempfile::tempdir().unwrap();
    let nodes = ServeNode::on_database(&db.url, data.path(), &["n1", "n2"], 2);
    for node in &nodes {
        for guest in ["echo", "misbehave", "sleep"] {
            node.upload(guest);
        }
    }
    nodes[0].call("POST", "/v1/tenants", Some(json!({"name": "a"})));
    let budget = json!({"cpu_budget": {"cpu": "200ms", "period": "366d"}});
    nodes[0].call("PATCH", "/v1/tenants/a", Some(budget));
    let token = nodes[0].call("POST", "/v1/tenants/a/tokens", Some(json!({})))["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let open = |node: &ServeNode, credential: &str, tasks: Value| {
        node.call_as(
            credential,
            "POST",
            "/v1/batches",
            Some(json!({ "tasks": tasks })),
        )["batch"]["id"]
            .as_i64()
            .unwrap()
    };
    let spin =
        json!([{"module": "misbehave", "input": "spin", "timeout": "60s", "max_attempts": 1}]);
    let spinner = open(&nodes[0], &token, spin);
    nodes[1].wait(spinner, Duration::from_secs(60));
    let echoes = json!([{"module": "echo", "input": "1"}, {"module": "echo", "input": "2"}]);
    let held = open(&nodes[1], &token, echoes);
    let mine = open(&nodes[0], serve_node::TOKEN, sleepers(8, 300));
    nodes[1].wait(mine, Duration::from_secs(60));
    let log = nodes[0].log();
    let of =
        |batch: i64| -> Vec<&AttemptRecord> { log.iter().filter(|r| r.batch == batch).collect() };
    let crossed = of(spinner);
    assert!(
        crossed.len() == 1 && crossed[0].outcome == qhost::runtime::Outcome::Budget,
        "{crossed:?}"
    );
    assert!(of(held).is_empty(), "A's tasks started past its budget");
    let spans: Vec<Span> = of(mine).into_iter().map(Span::from).collect();
    assert_eq!(
        peak_overlap(&spans),
        4,
        "a slot idled while the admin's work waited"
    );
    nodes[1].call("PATCH", "/v1/tenants/a", Some(json!({"cpu_budget": null})));
    let progress = nodes[0].wait(held, Duration::from_secs(60));
    assert_eq!(progress["succeeded"], 2, "{progress}");
}
