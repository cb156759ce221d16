//! Guards of the PostgreSQL hot path's cost that cannot flake: every hot statement's plan
//! (`qhost::store::postgres::hot`) read back on a filled store, before and after
//! `ANALYZE`, and the buffers a claim's reads touch counted at two queue sizes.

use std::sync::Arc;
use std::time::Duration;

use qhost::store::postgres::PostgresStore;
use qhost::store::postgres::hot::{HOT, LARGE_TABLES};
use qhost::store::*;
use qhost_tests::admitted;
use qhost_tests::pg::TestDb;
use serde_json::Value;
use tokio_postgres::{Client, SimpleQueryMessage};

/// One test of this file at a time: a fill's long transaction in one would hold back what
/// another's `VACUUM` may mark all-visible, and so the plans and heap fetches it checks.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The highest `$N` in `sql`: how many parameters it takes.
fn parameters(sql: &str) -> usize {
    let mut most = 0;
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        rest = &rest[at + 1..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        most = most.max(digits.parse().unwrap_or(0));
    }
    most
}

/// Every step of a JSON plan, depth first.
fn nodes<'a>(node: &'a Value, out: &mut Vec<&'a Value>) {
    out.push(node);
    for child in node["Plans"].as_array().into_iter().flatten() {
        nodes(child, out);
    }
}

/// Each step of a JSON plan, as `Node Type` and, where it reads one, `index on table`.
fn steps(node: &Value, out: &mut Vec<(String, Option<String>, Option<String>)>) {
    let mut all = Vec::new();
    nodes(node, &mut all);
    out.extend(all.into_iter().map(|step| {
        let kind = step["Node Type"].as_str().unwrap_or_default().to_owned();
        let index = step["Index Name"].as_str().map(str::to_owned);
        let table = step["Relation Name"].as_str().map(str::to_owned);
        (kind, index, table)
    }));
}

/// The generic plan of `sql`, the one a prepared statement settles on: what every
/// execution gets once its custom plans cost no less.
async fn generic_plan(client: &Client, sql: &str) -> Vec<(String, Option<String>, Option<String>)> {
    let sql = sql
        .lines()
        .filter(|line| !line.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    client.batch_execute("DEALLOCATE ALL").await.unwrap();
    client
        .batch_execute(&format!("PREPARE hot AS {sql}"))
        .await
        .unwrap_or_else(|e| panic!("preparing {sql}: {e}"));
    let nulls = vec!["NULL"; parameters(&sql)].join(", ");
    let execute = match nulls.is_empty() {
        true => "EXECUTE hot".to_owned(),
        false => format!("EXECUTE hot({nulls})"),
    };
    let plan = explain(client, &format!("EXPLAIN (FORMAT JSON) {execute}")).await;
    let mut out = Vec::new();
    steps(&plan[0]["Plan"], &mut out);
    out
}

async fn check_plans(client: &Client, when: &str) {
    client
        .batch_execute("SET plan_cache_mode = force_generic_plan")
        .await
        .unwrap();
    let mut wrong = Vec::new();
    for hot in HOT {
        let plan = generic_plan(client, hot.sql).await;
        // Index names are unique in a schema: `index on table` is matched by its index.
        let missing: Vec<&str> = hot
            .indexes
            .iter()
            .copied()
            .filter(|wanted| {
                let name = wanted.split(' ').next().unwrap_or_default();
                !plan
                    .iter()
                    .any(|(_, index, _)| index.as_deref() == Some(name))
            })
            .collect();
        let whole: Vec<&String> = plan
            .iter()
            .filter(|(kind, _, _)| kind == "Seq Scan")
            .filter_map(|(_, _, table)| table.as_ref())
            .filter(|table| LARGE_TABLES.contains(&table.as_str()))
            .collect();
        if !missing.is_empty() || !whole.is_empty() {
            wrong.push(format!(
                "{}: plan {plan:?}, missing {missing:?}, reads whole {whole:?}",
                hot.name
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "hot statements planned wrong {when}:\n{}",
        wrong.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hot_statement_uses_its_index_before_and_after_analyze() {
    let _serial = SERIAL.lock().await;
    let db = TestDb::new().await;
    // Opening the store migrates the schema.
    let store = PostgresStore::connect(&db.url, "plans").await.unwrap();
    qhost::cli::bench_fill::fill_postgres(&db.url, 200_000, now_micros())
        .await
        .unwrap();
    let client = db.connect().await;
    check_plans(&client, "without ANALYZE").await;
    qhost::cli::bench_fill::vacuum_postgres(&db.url)
        .await
        .unwrap();
    check_plans(&client, "after ANALYZE").await;
    drop(store);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_the_log_until_a_time_passes_over_later_attempts_in_the_key_alone() {
    let _serial = SERIAL.lock().await;
    let db = TestDb::new().await;
    let store = PostgresStore::connect(&db.url, "plans").await.unwrap();
    let now = now_micros();
    // Attempts over the day before `now`: half of them start after the page's end.
    qhost::cli::bench_fill::fill_postgres(&db.url, 200_000, now)
        .await
        .unwrap();
    qhost::cli::bench_fill::vacuum_postgres(&db.url)
        .await
        .unwrap();
    let client = db.connect().await;
    let until = now - 43_200_000_000;
    let later: i64 = client
        .query_one(
            "SELECT count(*) FROM attempts WHERE started_at >= $1",
            &[&until],
        )
        .await
        .unwrap()
        .get(0);
    assert!(
        later > 10_000,
        "the fill left {later} attempts after the page's end"
    );
    let filter = AttemptFilter {
        until: Some(until),
        newest_first: true,
        limit: Some(50),
        ..AttemptFilter::default()
    };
    let sql = qhost::store::postgres::attempt_page_sql(&store, &filter)
        .await
        .unwrap();
    assert_eq!(parameters(&sql), 2, "{sql}");
    client
        .batch_execute(&format!("PREPARE page AS {sql}"))
        .await
        .unwrap();
    let plan = explain(
        &client,
        &format!("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE page({until}, 50)"),
    )
    .await;
    let top = &plan[0]["Plan"];
    assert_eq!(top["Actual Rows"].as_i64(), Some(50), "{plan:#}");
    let mut steps = Vec::new();
    nodes(top, &mut steps);
    // The step that passes over the later attempts reads no row of theirs.
    let passing: Vec<&&Value> = steps
        .iter()
        .filter(|step| step["Rows Removed by Filter"].as_i64().unwrap_or(0) > 0)
        .collect();
    assert_eq!(passing.len(), 1, "{plan:#}");
    let step = passing[0];
    assert_eq!(step["Node Type"], "Index Only Scan", "{plan:#}");
    assert_eq!(step["Index Name"], "attempts_pkey", "{plan:#}");
    assert_eq!(step["Heap Fetches"].as_i64(), Some(0), "{plan:#}");
    assert!(
        step["Rows Removed by Filter"].as_i64().unwrap() >= later,
        "{plan:#}"
    );
    drop(store);
}

/// A store with `tasks` ready tasks, the `i`th in group `g{i % 1000}`, 1,000 groups of
/// limit 1, and the first 900 groups in claim order made full by a claim.
async fn busy_queue(db: &TestDb, tasks: usize) -> Arc<dyn Store> {
    let store: Arc<dyn Store> = Arc::new(PostgresStore::connect(&db.url, "plans").await.unwrap());
    let module = store
        .module_put(
            b"a module the store never runs".to_vec(),
            None,
            None,
            now_micros(),
        )
        .await
        .unwrap()
        .digest;
    let batch = store
        .batch_open(BatchSpec::default(), [1; 32], now_micros())
        .await
        .unwrap()
        .id;
    let specs: Vec<TaskSpec> = (0..tasks)
        .map(|i| TaskSpec {
            group: Some(format!("g{}", i % 1000)),
            ..TaskSpec::new(module, Vec::new())
        })
        .collect();
    for chunk in specs.chunks(10_000) {
        store
            .task_submit(batch, admitted(chunk.to_vec()), now_micros())
            .await
            .unwrap();
    }
    let claimed = store
        .task_claim(ClaimParams {
            node: "plans".into(),
            max: 900,
            now: now_micros(),
            lease: Duration::from_secs(300),
        })
        .await
        .unwrap();
    assert_eq!(claimed.tasks.len(), 900);
    let client = db.connect().await;
    client
        .batch_execute("VACUUM (ANALYZE) tasks, ready, groups, batches")
        .await
        .unwrap();
    store
}

/// The JSON an `EXPLAIN (FORMAT JSON)` statement answers (as text: the simple protocol).
async fn explain(client: &Client, statement: &str) -> Value {
    let messages = client.simple_query(statement).await.unwrap();
    let text = messages
        .iter()
        .find_map(|message| match message {
            SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{statement} answered no plan"));
    serde_json::from_str(&text).unwrap()
}

/// The shared buffers one run of `sql` touches, hit or read, with `arguments` as SQL
/// literals.
async fn buffers(client: &Client, sql: &str, arguments: &[String]) -> i64 {
    client.batch_execute("DEALLOCATE ALL").await.unwrap();
    client
        .batch_execute(&format!("PREPARE measured AS {sql}"))
        .await
        .unwrap();
    let statement = format!(
        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE measured({})",
        arguments.join(", ")
    );
    let plan = explain(client, &statement).await;
    let top = &plan[0]["Plan"];
    top["Shared Hit Blocks"].as_i64().unwrap() + top["Shared Read Blocks"].as_i64().unwrap()
}

/// The buffers of a claim's reads when 900 of 1,000 groups are full: the window, which
/// meets only full groups, and the look behind it.
async fn claim_buffers(tasks: usize) -> i64 {
    let db = TestDb::new().await;
    let store = busy_queue(&db, tasks).await;
    let client = db.connect().await;
    let now = now_micros() + 1_000_000;
    let window = HOT
        .iter()
        .find(|hot| hot.name == "claim: the window")
        .unwrap()
        .sql;
    let beyond = HOT
        .iter()
        .find(|hot| hot.name == "claim: the look behind the window")
        .unwrap()
        .sql;
    let read: i64 = 48;
    let window_buffers = buffers(&client, window, &[now.to_string(), read.to_string()]).await;
    let last = client
        .query(window, &[&now, &read])
        .await
        .unwrap()
        .last()
        .map(|row| {
            (
                row.get::<_, i32>(5),
                row.get::<_, i64>(4),
                row.get::<_, i64>(0),
            )
        })
        .unwrap();
    // Eight tasks behind the window's last, none of its groups filled, no batch or tenant
    // full.
    let arguments = [
        now.to_string(),
        last.0.to_string(),
        last.1.to_string(),
        last.2.to_string(),
        "8".to_owned(),
        "'{}'".to_owned(),
        "'{}'".to_owned(),
        "'{}'".to_owned(),
    ];
    let beyond_buffers = buffers(&client, beyond, &arguments).await;
    drop(store);
    window_buffers + beyond_buffers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claims_reads_do_not_grow_with_the_queue() {
    let _serial = SERIAL.lock().await;
    let small = claim_buffers(2_000).await;
    let large = claim_buffers(50_000).await;
    // Read by the benchmark suite (benches/targets.toml).
    println!(
        "figure: claim-work-growth-postgres = {} x",
        large as f64 / small as f64
    );
    assert!(
        large as f64 <= small as f64 * 1.5,
        "a claim's reads touched {small} buffers at 2,000 queued tasks, {large} at 50,000"
    );
}
