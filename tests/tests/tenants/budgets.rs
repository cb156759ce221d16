//! Budgets through a real `qhost serve`: the task that crosses its tenant's budget of CPU,
//! memory-time or HTTP bytes ends `budget`, the tenant's tasks not started wait for the next window
//! while the other tenants' run on every slot, and lifting the budget lets them go at once.

use super::*;

/// A's CPU budget: 200 ms per window. The window is long, so that no test run meets its
/// end.
const BUDGET_MICROS: i64 = 200_000;
/// A's memory budget, in MiB-seconds: 64 MiB held reaches it in 62.5 ms.
const BUDGET_MIB_SECONDS: f64 = 4.0;
/// A's HTTP budget, in body bytes: the crossing task fetches 300 kB.
const BUDGET_HTTP_BYTES: u64 = 100_000;

/// What a budget test meters.
#[derive(Debug, Clone, Copy)]
enum Meter {
    Cpu,
    Memory,
    Http,
}

impl Meter {
    /// A's budget, and the batch whose task crosses it: a spinner, a guest that grows to
    /// 64 MiB and sleeps 300 ms, or one that fetches 300 kB from `origin`.
    fn budget_and_crossing(self, origin: &OriginServer) -> (Value, Value) {
        let one = |task: Value| json!({ "tasks": [task] });
        match self {
            Meter::Cpu => (
                json!({"period": "366d", "cpu": "200ms"}),
                one(
                    json!({"module": "misbehave", "input": "spin", "timeout": "60s",
                           "max_attempts": 1}),
                ),
            ),
            Meter::Memory => (
                json!({"period": "366d", "memory_mib_seconds": BUDGET_MIB_SECONDS as u64}),
                one(
                    json!({"module": "misbehave", "input": "hold:1024", "memory": "128MiB",
                           "max_attempts": 1}),
                ),
            ),
            Meter::Http => (
                json!({"period": "366d", "http_bytes": BUDGET_HTTP_BYTES}),
                json!({
                    "allow_http": [origin.origin()],
                    "tasks": [{"module": "fetch", "input": origin.url("/bytes/300000"),
                               "max_attempts": 1}]
                }),
            ),
        }
    }

    /// Checks what the crossing attempt used against the budget, and the tenant's usage
    /// against it.
    fn check(self, crossed: &AttemptRecord, used: &Value) {
        match self {
            Meter::Cpu => {
                let cpu = crossed.cpu_micros.expect("a run measures its CPU time");
                assert!(
                    (BUDGET_MICROS..2 * BUDGET_MICROS).contains(&cpu),
                    "the spinner used {cpu} µs of a {BUDGET_MICROS} µs budget"
                );
                assert_eq!(used["cpu_micros"], cpu, "{used}");
            }
            Meter::Memory => {
                let held = crossed
                    .memory_mib_seconds
                    .expect("a run measures its memory");
                assert!(
                    (BUDGET_MIB_SECONDS..BUDGET_MIB_SECONDS + 64.0 * 0.1).contains(&held),
                    "the holder held {held} MiB-s of a {BUDGET_MIB_SECONDS} MiB-s budget"
                );
                let counted = used["memory_mib_seconds"].as_f64().unwrap_or_default();
                assert!((counted - held).abs() < 0.002, "{used} against {held}");
            }
            Meter::Http => {
                let moved = crossed.http_bytes.expect("a run measures its HTTP bytes");
                assert!(
                    (BUDGET_HTTP_BYTES + 1..300_000).contains(&moved),
                    "the fetcher moved {moved} bytes of a {BUDGET_HTTP_BYTES} byte budget"
                );
                assert_eq!(used["http_bytes"], moved, "{used}");
            }
        }
    }
}

pub(super) fn a_tenant_at_its_cpu_budget_stops_and_the_others_run_on(db: Option<&str>) {
    a_tenant_at_its_budget_stops_and_the_others_run_on(db, Meter::Cpu);
}

pub(super) fn a_tenant_at_its_memory_budget_stops_and_the_others_run_on(db: Option<&str>) {
    a_tenant_at_its_budget_stops_and_the_others_run_on(db, Meter::Memory);
}

pub(super) fn a_tenant_at_its_http_budget_stops_and_the_others_run_on(db: Option<&str>) {
    a_tenant_at_its_budget_stops_and_the_others_run_on(db, Meter::Http);
}

/// Tenant A's task that crosses its budget uses it and ends `budget`; A's echo tasks
/// submitted after wait, while B's sleepers, submitted after them, all run two at a time
/// on the two slots; with the budget lifted, A's tasks run at once.
fn a_tenant_at_its_budget_stops_and_the_others_run_on(db: Option<&str>, meter: Meter) {
    let data = tempfile::tempdir().unwrap();
    let origin = OriginServer::start();
    let t = Tenants::start_slots(data.path(), db, 2, &["--allow-http", &origin.origin()]);
    for guest in ["misbehave", "sleep", "fetch"] {
        t.server.upload(guest);
    }
    let (budget, crossing) = meter.budget_and_crossing(&origin);
    let (status, set) = admin(
        &t.server,
        "PATCH",
        "/v1/tenants/a",
        json!({ "budget": budget }),
    );
    assert_eq!(status, 200, "{set}");
    // The period as humantime writes it back: `1year 18h`.
    let period = set["budget"]["period"].as_str().unwrap_or_default();
    assert_eq!(
        qhost::units::parse_duration(period).ok(),
        Some(Duration::from_secs(366 * 86_400)),
        "{set}"
    );
    for meter in ["cpu", "memory_mib_seconds", "http_bytes"] {
        assert_eq!(set["budget"][meter], budget[meter], "{set}");
    }
    assert_eq!(
        (&set["budget_used"], &set["held_until"]),
        (
            &json!({"cpu_micros": 0, "memory_mib_seconds": 0.0, "http_bytes": 0}),
            &Value::Null
        ),
        "{set}"
    );
    let open_batch = |token: &str, body: Value| {
        let (status, opened) = call("POST", &t.url("/v1/batches"), Some(token), Some(body));
        assert_eq!(status, 201, "{opened}");
        opened["batch"]["id"].as_i64().unwrap()
    };
    let open = |token: &str, tasks: Value| open_batch(token, json!({ "tasks": tasks }));
    let crosser = open_batch(&t.a, crossing);
    wait_ended(&t.server, crosser);
    let crossed = attempts_of(&t.server, crosser);
    assert_eq!(crossed.len(), 1, "the crossing task ran once");
    assert_eq!(
        crossed[0].outcome,
        qhost::runtime::Outcome::Budget,
        "{crossed:?}"
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
    meter.check(&crossed[0], &a["budget_used"]);
    assert!(a["held_until"].as_i64().is_some(), "{a}");
    let metrics = t.metrics();
    let (budget_series, used_series, used) = match meter {
        Meter::Cpu => (
            r#"qhost_tenant_cpu_budget_seconds{tenant="a"} 0.2"#,
            "qhost_tenant_cpu_budget_used_seconds{tenant=\"a\"} ",
            a["budget_used"]["cpu_micros"].as_f64().unwrap_or_default() / 1e6,
        ),
        Meter::Memory => (
            r#"qhost_tenant_memory_budget_mib_seconds{tenant="a"} 4"#,
            "qhost_tenant_memory_budget_used_mib_seconds{tenant=\"a\"} ",
            a["budget_used"]["memory_mib_seconds"]
                .as_f64()
                .unwrap_or_default(),
        ),
        Meter::Http => (
            r#"qhost_tenant_http_budget_bytes{tenant="a"} 100000"#,
            "qhost_tenant_http_budget_used_bytes{tenant=\"a\"} ",
            a["budget_used"]["http_bytes"].as_f64().unwrap_or_default(),
        ),
    };
    assert!(metrics.contains(budget_series), "{metrics}");
    assert!(
        metrics.contains(&format!("{used_series}{used}")),
        "{used_series}{used} in\n{metrics}"
    );

    // Lifted: they run at once.
    let (status, set) = admin(
        &t.server,
        "PATCH",
        "/v1/tenants/a",
        json!({ "budget": null }),
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
pub(super) fn a_budget_out_of_bounds_is_refused(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let t = Tenants::start(data.path(), db);
    for (bad, field) in [
        (json!({"cpu": "2h", "period": "1h"}), "budget.cpu"),
        (json!({"cpu": "1s", "period": "500ms"}), "budget.period"),
        (json!({"cpu": "soon", "period": "1h"}), "soon"),
        (json!({"cpu": "1s"}), "period"),
        (
            json!({"memory_mib_seconds": 0, "period": "1h"}),
            "budget.memory_mib_seconds",
        ),
        (
            json!({"http_bytes": 0, "period": "1h"}),
            "budget.http_bytes",
        ),
        (json!({"period": "1h"}), "names no meter"),
        (json!({"disk": 1, "period": "1h"}), "disk"),
    ] {
        let (status, refused) = admin(
            &t.server,
            "PATCH",
            "/v1/tenants/a",
            json!({ "budget": bad }),
        );
        assert_eq!(status, 400, "{bad}: {refused}");
        assert!(refused.to_string().contains(field), "{bad}: {refused}");
    }
    let (_, list) = call("GET", &t.url("/v1/tenants"), Some(&t.server.token), None);
    assert_eq!(list["tenants"][0]["budget"], Value::Null, "{list}");
}

/// A tenant added gets the server's `--tenant-budget`; one the server refuses names the
/// flag.
pub(super) fn a_new_tenant_gets_the_servers_budget(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let flag = ["--tenant-budget", "cpu=10s,memory=1GiB*1m,http=100MB/1h"];
    let t = Tenants::start_with(data.path(), db, &flag);
    let (_, list) = call("GET", &t.url("/v1/tenants"), Some(&t.server.token), None);
    for tenant in list["tenants"].as_array().unwrap() {
        assert_eq!(
            tenant["budget"],
            json!({"period": "1h", "cpu": "10s", "memory_mib_seconds": 61440,
                   "http_bytes": 100_000_000}),
            "{tenant}"
        );
    }
    let refused = std::process::Command::new(qhost_tests::qhost_binary())
        .args(["serve", "--tenant-budget", "10s"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && said.contains("--tenant-budget"),
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
    let budget = json!({"budget": {"cpu": "200ms", "period": "366d"}});
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
    nodes[1].call("PATCH", "/v1/tenants/a", Some(json!({"budget": null})));
    let progress = nodes[0].wait(held, Duration::from_secs(60));
    assert_eq!(progress["succeeded"], 2, "{progress}");
}
