//! Schedules' ticks with a clock the tests hold: three nodes handling one tick open one
//! batch; missed ticks after an outage fire as `catch_up` says; `overlap` skips, waits or
//! allows; a restarted SQLite node fires nothing twice.

use std::sync::Arc;

use qhost::runtime::{Runtime, RuntimeConfig};
use qhost::scheduler::node::Ticker;
use qhost::scheduler::{Scheduler, SchedulerConfig};
use qhost::schedules::timing::Timing;
use qhost::store::postgres::PostgresStore;
use qhost::store::sqlite::SqliteStore;
use qhost::store::*;
use qhost::units::parse_time;
use qhost_tests::pg::TestDb;
use serde_json::json;

fn at(text: &str) -> Micros {
    parse_time(text).unwrap()
}

/// A ticker of a node on `store`; each tick's batch holds one `echo` task.
fn ticker(store: &Arc<dyn Store>) -> Ticker {
    let runtime = Arc::new(Runtime::new(RuntimeConfig::with_workers(1)).unwrap());
    Ticker::new(Scheduler::new(
        store.clone(),
        runtime,
        SchedulerConfig::new("ticker"),
    ))
}

async fn setup(store: &Arc<dyn Store>, cron: &str, overlap: &str, catch_up: &str, from: Micros) {
    store
        .module_put(
            std::fs::read(qhost_tests::guest("echo")).unwrap(),
            Some("echo".into()),
            None,
            from,
        )
        .await
        .unwrap();
    let timing = Timing::new(cron, "UTC").unwrap();
    store
        .schedule_create(
            ScheduleSpec {
                name: "s".into(),
                cron: cron.into(),
                timezone: "UTC".into(),
                plan: json!({"tasks": [{"module": "echo", "input": "x", "max_attempts": 1}]}),
                overlap: overlap.into(),
                catch_up: catch_up.into(),
            },
            timing.next_after(from),
            from,
        )
        .await
        .unwrap();
}

/// The ticks handled, oldest first: (due at, result, whether it opened a batch).
async fn ticks(store: &Arc<dyn Store>) -> Vec<(Micros, TickResult, bool)> {
    let id = store.schedule_get("s".into()).await.unwrap().id;
    let mut ticks: Vec<_> = store
        .schedule_ticks(id, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|t| (t.due_at, t.result, t.batch.is_some()))
        .collect();
    ticks.reverse();
    ticks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_handling_one_tick_open_one_batch() {
    let db = TestDb::new().await;
    let mut stores: Vec<Arc<dyn Store>> = Vec::new();
    for n in 0..3 {
        stores.push(Arc::new(
            PostgresStore::connect(&db.url, &format!("node-{n}"))
                .await
                .unwrap(),
        ));
    }
    let from = at("2026-01-01T00:00:00Z");
    setup(&stores[0], "*/10 * * * * *", "allow", "none", from).await;
    // Each node handles the ticks due at the same moments, all at once.
    for second in [10, 20, 30] {
        let now = from + second * 1_000_000;
        let handlers = stores.iter().map(|store| {
            let ticker = ticker(store);
            tokio::spawn(async move { ticker.tick(now).await.unwrap() })
        });
        for handler in handlers.collect::<Vec<_>>() {
            handler.await.unwrap();
        }
    }
    let seconds: Vec<_> = ticks(&stores[1])
        .await
        .into_iter()
        .map(|(due, result, opened)| ((due - from) / 1_000_000, result, opened))
        .collect();
    assert_eq!(
        seconds,
        [10, 20, 30].map(|s| (s, TickResult::Fired, true)),
        "each tick once, each with its batch"
    );
    assert_eq!(stores[2].task_counts().await.unwrap().ready, 3);
}

#[tokio::test]
async fn after_an_outage_the_last_missed_tick_fires_then_the_one_on_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let from = at("2026-01-01T00:30:00Z");
    {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
        setup(&store, "0 * * * *", "allow", "last", from).await;
        let t = ticker(&store);
        t.tick(at("2026-01-01T01:00:00Z")).await.unwrap();
        assert_eq!(ticks(&store).await.len(), 1);
    }
    // The node comes back at 05:00:20: 02:00 to 04:00 were missed.
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    let t = ticker(&store);
    t.tick(at("2026-01-01T05:00:20Z")).await.unwrap();
    t.tick(at("2026-01-01T05:00:30Z")).await.unwrap();
    let handled: Vec<_> = ticks(&store)
        .await
        .into_iter()
        .map(|(due, r, _)| (due, r))
        .collect();
    assert_eq!(
        handled,
        [1, 4, 5].map(|h| (at(&format!("2026-01-01T{h:02}:00:00Z")), TickResult::Fired)),
        "01:00 before the outage; the last missed tick (04:00); 05:00 on time; none twice"
    );
    let s = store.schedule_get("s".into()).await.unwrap();
    assert_eq!(
        (s.missed, s.next_due),
        (2, Some(at("2026-01-01T06:00:00Z")))
    );
}

#[tokio::test]
async fn overlap_skips_or_waits_while_the_last_batch_is_open() {
    for overlap in ["skip", "queue", "allow"] {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&dir.path().join("s.db")).unwrap());
        let from = at("2026-01-01T00:00:00Z");
        setup(&store, "* * * * *", overlap, "last", from).await;
        let t = ticker(&store);
        let minute = |m: i64| from + m * 60_000_000;
        t.tick(minute(1)).await.unwrap();
        // The first tick's batch is still open at the second tick.
        t.tick(minute(2)).await.unwrap();
        let first_batch = store
            .schedule_get("s".into())
            .await
            .unwrap()
            .last_batch
            .unwrap();
        let handled = ticks(&store).await;
        match overlap {
            "skip" => assert_eq!(
                handled,
                [
                    (minute(1), TickResult::Fired, true),
                    (minute(2), TickResult::Skipped, false)
                ]
            ),
            "queue" => assert_eq!(
                handled,
                [(minute(1), TickResult::Fired, true)],
                "the second tick waits"
            ),
            _ => assert_eq!(
                handled,
                [
                    (minute(1), TickResult::Fired, true),
                    (minute(2), TickResult::Fired, true)
                ]
            ),
        }
        if overlap == "queue" {
            store
                .batch_cancel(first_batch, minute(2) + 1)
                .await
                .unwrap();
            t.tick(minute(2) + 2).await.unwrap();
            assert_eq!(
                ticks(&store).await,
                [
                    (minute(1), TickResult::Fired, true),
                    (minute(2), TickResult::Fired, true)
                ],
                "once the batch has ended, the waiting tick fires"
            );
        }
    }
}

/// After handling a tick, the ticker looks again at the schedules' next ticks as they are
/// then: a one-second schedule is looked at again a second later, not after the longest
/// sleep.
#[tokio::test]
async fn after_a_tick_the_ticker_wakes_for_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&dir.path().join("s.db")).unwrap());
    let from = at("2026-01-01T00:00:00Z");
    setup(&store, "* * * * * *", "allow", "none", from).await;
    let t = ticker(&store);
    let second = |s: i64| from + s * 1_000_000;
    assert_eq!(t.tick(second(1)).await.unwrap(), Some(second(2)));
    assert_eq!(t.tick(second(2) + 300).await.unwrap(), Some(second(3)));
    assert_eq!(ticks(&store).await.len(), 2);
}

/// A tick whose plan names a module by a name that names none any more fails, and its
/// record says which name and why.
#[tokio::test]
async fn a_tick_whose_module_name_names_nothing_fails_saying_which() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&dir.path().join("s.db")).unwrap());
    let from = at("2026-01-01T00:00:00Z");
    setup(&store, "* * * * *", "allow", "none", from).await;
    let module = store.module_list().await.unwrap()[0].digest;
    store.module_delete(module).await.unwrap();
    ticker(&store).tick(from + 60_000_000).await.unwrap();
    let id = store.schedule_get("s".into()).await.unwrap().id;
    let recorded = store.schedule_ticks(id, 10).await.unwrap();
    assert_eq!(recorded.len(), 1);
    assert_eq!(
        (recorded[0].result, recorded[0].batch),
        (TickResult::Failed, None)
    );
    let detail = recorded[0].detail.clone().unwrap_or_default();
    assert!(
        detail.starts_with("the plan opens no batch: task 0: field `module`:")
            && detail.contains("`echo`"),
        "{detail}"
    );
}
