//! Weighted fair share through a real `qhost serve`: three tenants of weights 1:2:5 with
//! more work than slots get slot time in that proportion, within ±10% over a minute, as
//! the execution log records it, whatever the number, size and priority of their batches
//! and the length of their tasks; on one SQLite node and on two PostgreSQL nodes. And the
//! server's weight for new tenants, and weights out of range refused.

use std::time::{Duration, Instant};

use super::*;

/// A tenant of the share: its name, its weight, the batches it opens (tasks in each), how
/// long each of its tasks sleeps, and its batches' priority. The lightest tenant has the
/// highest priority and the longest tasks; the heaviest the most batches and the shortest:
/// none of that may move the share.
struct Share {
    name: &'static str,
    weight: u32,
    batches: &'static [usize],
    millis: u64,
    priority: i32,
}

const SHARES: [Share; 3] = [
    Share {
        name: "a",
        weight: 1,
        batches: &[400],
        millis: 400,
        priority: 100,
    },
    Share {
        name: "b",
        weight: 2,
        batches: &[300, 300, 300, 300],
        millis: 200,
        priority: 0,
    },
    Share {
        name: "c",
        weight: 5,
        batches: &[2500, 2500],
        millis: 100,
        priority: -5,
    },
];

/// Measured from this long after the first attempt started, when every slot is busy.
const WARM_UP: Duration = Duration::from_secs(3);
/// The window the share is measured over.
const WINDOW: Duration = Duration::from_secs(60);

/// What a run of the share needs: where it runs (for the figure it prints), opening a
/// batch with a tenant's token, and the log.
struct Run<'a> {
    on: &'static str,
    slots: usize,
    open: &'a dyn Fn(&str, Value) -> i64,
    log: &'a dyn Fn() -> Vec<AttemptRecord>,
}

/// One measure of the share at a time: two would share the machine's cores, and a slot
/// waiting for a core idles whatever the scheduler does.
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Opens every tenant's batches, interleaved, waits for the window to pass, and checks
/// each tenant's slot time in it against its weight.
fn shares_follow_weights(run: Run<'_>, tokens: &[String]) {
    let _alone = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let mut batches: BTreeMap<i64, usize> = BTreeMap::new();
    let most = SHARES.iter().map(|s| s.batches.len()).max().unwrap_or(0);
    for round in 0..most {
        for (tenant, share) in SHARES.iter().enumerate() {
            let Some(&count) = share.batches.get(round) else {
                continue;
            };
            let tasks: Vec<Value> = (0..count)
                .map(|_| json!({"module": "sleep", "input": share.millis.to_string()}))
                .collect();
            let body = json!({"priority": share.priority, "tasks": tasks});
            batches.insert((run.open)(&tokens[tenant], body), tenant);
        }
    }
    // The window starts once work runs: the first attempt to end says when it started.
    let waited = Instant::now();
    let first = loop {
        if let Some(first) = (run.log)().iter().map(|r| r.started_at).min() {
            break first;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "no attempt ended"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let from = first + WARM_UP.as_micros() as i64;
    let to = from + WINDOW.as_micros() as i64;
    // Past the window's end by more than the longest task: every attempt that ran in the
    // window has ended and is in the log.
    let past = Duration::from_micros((to - qhost::store::now_micros()).max(0) as u64);
    std::thread::sleep(past + Duration::from_secs(1));
    let mut held = [0i64; 3];
    for record in (run.log)() {
        let Some(&tenant) = batches.get(&record.batch) else {
            continue;
        };
        held[tenant] += (record.ended_at.min(to) - record.started_at.max(from)).max(0);
    }
    let total: i64 = held.iter().sum();
    let weights: u32 = SHARES.iter().map(|s| s.weight).sum();
    let slot_time = run.slots as f64 * WINDOW.as_secs_f64();
    let busy = total as f64 / 1e6 / slot_time;
    let mut report = format!(
        "slots busy {:.1}% of {:.0} slot-seconds;",
        busy * 100.0,
        slot_time
    );
    let mut off = Vec::new();
    let mut worst: f64 = 0.0;
    for (share, &held) in SHARES.iter().zip(&held) {
        let expected = f64::from(share.weight) / f64::from(weights);
        let got = held as f64 / total as f64;
        let ratio = got / expected;
        report += &format!(
            " {} (weight {}): {:.1} slot-s, {:.1}% for {:.1}% ({:+.1}%);",
            share.name,
            share.weight,
            held as f64 / 1e6,
            got * 100.0,
            expected * 100.0,
            (ratio - 1.0) * 100.0
        );
        worst = worst.max((ratio - 1.0).abs());
        if !(0.9..=1.1).contains(&ratio) {
            off.push(share.name);
        }
    }
    println!("{report}");
    // Read by the benchmark suite (benches/targets.toml).
    println!(
        "figure: tenant-share-error ({}) = {:.1} %",
        run.on,
        worst * 100.0
    );
    assert!(off.is_empty(), "tenants {off:?} off their share: {report}");
    // Liveness beside the share: with work waiting, the slots stayed busy (what is left is
    // each task's start and end, and the other tests' use of the cores).
    assert!(busy >= 0.8, "slots idled while work waited: {report}");
}

/// Tenant `name`'s weight set by the admin through `call`, as the answer shows it.
fn weigh(call: &dyn Fn(&str, Value) -> Value, name: &str, weight: u32) {
    let set = call(&format!("/v1/tenants/{name}"), json!({ "weight": weight }));
    assert_eq!(set["weight"], weight, "{set}");
}

/// One SQLite node of eight slots.
#[test]
fn three_tenants_get_slot_time_by_their_weights() {
    let data = tempfile::tempdir().unwrap();
    let t = Tenants::start_slots(data.path(), None, 8, &[]);
    t.server.upload("sleep");
    let (status, added) = admin(&t.server, "POST", "/v1/tenants", json!({"name": "c"}));
    assert_eq!(status, 201, "{added}");
    let (status, made) = admin(&t.server, "POST", "/v1/tenants/c/tokens", json!({}));
    assert_eq!(status, 201, "{made}");
    let c = made["token"].as_str().unwrap().to_owned();
    let patch = |path: &str, body: Value| {
        let (status, set) = admin(&t.server, "PATCH", path, body);
        assert_eq!(status, 200, "{set}");
        set
    };
    for share in &SHARES {
        weigh(&patch, share.name, share.weight);
    }
    assert!(
        t.metrics().contains(r#"qhost_tenant_weight{tenant="c"} 5"#),
        "the weights reach /metrics"
    );
    let open = |token: &str, body: Value| {
        let (status, opened) = call("POST", &t.url("/v1/batches"), Some(token), Some(body));
        assert_eq!(status, 201, "{opened}");
        opened["batch"]["id"].as_i64().unwrap()
    };
    let log = || t.server.log();
    shares_follow_weights(
        Run {
            on: "one SQLite node",
            slots: 8,
            open: &open,
            log: &log,
        },
        &[t.a.clone(), t.b.clone(), c],
    );
}

/// A tenant added gets the server's `--tenant-weight`; a weight out of range is refused
/// by the API and the command line, naming the field, and the tenant keeps its own.
pub(super) fn a_new_tenant_gets_the_servers_weight_and_keeps_it_from_bad_ones(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let t = Tenants::start_with(data.path(), db, &["--tenant-weight", "3"]);
    t.refuses_limits_of_a("weight", 10_001, 3);
    let out = t
        .server
        .cli()
        .args(["tenant", "set", "a", "--weight", "0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("weight"),
        "{stderr}"
    );
}

/// Two nodes of four slots sharing PostgreSQL, the tenants' batches opened through
/// either: the share holds across them.
#[test]
fn three_tenants_get_slot_time_by_their_weights_across_nodes() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDb::new());
    let data = tempfile::tempdir().unwrap();
    let nodes = ServeNode::on_database(&db.url, data.path(), &["n1", "n2"], 4);
    for node in &nodes {
        node.upload("sleep");
    }
    let mut tokens = Vec::new();
    for share in &SHARES {
        nodes[0].call("POST", "/v1/tenants", Some(json!({ "name": share.name })));
        let made = nodes[1].call(
            "POST",
            &format!("/v1/tenants/{}/tokens", share.name),
            Some(json!({})),
        );
        tokens.push(made["token"].as_str().unwrap().to_owned());
        weigh(
            &|path, body| nodes[1].call("PATCH", path, Some(body)),
            share.name,
            share.weight,
        );
    }
    let opened = std::cell::Cell::new(0);
    let open = |token: &str, body: Value| {
        let node = &nodes[opened.get() % 2];
        opened.set(opened.get() + 1);
        node.call_as(token, "POST", "/v1/batches", Some(body))["batch"]["id"]
            .as_i64()
            .unwrap()
    };
    let log = || nodes[0].log();
    shares_follow_weights(
        Run {
            on: "two PostgreSQL nodes",
            slots: 8,
            open: &open,
            log: &log,
        },
        &tokens,
    );
}
