//! The store conformance suite on the PostgreSQL driver, each case in a fresh schema, and
//! what only a shared store does: notifications between nodes, concurrent migrations,
//! clock offsets.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use qhost::store::postgres::PostgresStore;
use qhost::store::*;
use qhost_tests::pg::TestDb;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_passes_the_conformance_suite() {
    let schemas = Arc::new(std::sync::Mutex::new(Vec::new()));
    let counter = Arc::new(AtomicUsize::new(0));
    {
        let schemas = schemas.clone();
        qhost_tests::conformance::run_all(&move || {
            let schemas = schemas.clone();
            let n = counter.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                let db = TestDb::new().await;
                let store = PostgresStore::connect(&db.url, &format!("case-{n}"))
                    .await
                    .unwrap();
                schemas.lock().unwrap().push(db);
                Arc::new(store) as Arc<dyn Store>
            })
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_group_at_the_head_holds_up_nothing_behind_it() {
    let db = TestDb::new().await;
    let store = PostgresStore::connect(&db.url, "n1").await.unwrap();
    qhost_tests::conformance::a_long_group_at_the_head_holds_up_nothing_behind_it(Arc::new(store))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_starting_at_once_migrate_once() {
    let db = TestDb::new().await;
    let connects = (0..4).map(|n| {
        let url = db.url.clone();
        tokio::spawn(async move { PostgresStore::connect(&url, &format!("node-{n}")).await })
    });
    for connect in connects {
        connect.await.unwrap().expect("every node starts");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_nodes_hear_of_submissions_and_ended_tasks() {
    let db = TestDb::new().await;
    let a = PostgresStore::connect(&db.url, "a").await.unwrap();
    let b = PostgresStore::connect(&db.url, "b").await.unwrap();
    a.wait_listening().await;
    b.wait_listening().await;
    let mut heard = b.signals().expect("a shared store signals");
    let mut own = a.signals().unwrap();

    let bytes = std::fs::read(qhost_tests::guest("echo")).unwrap();
    let module = a.module_put(bytes, None, None, now_micros()).await.unwrap();
    let batch = a
        .batch_open(BatchSpec::default(), [7; 32], now_micros())
        .await
        .unwrap()
        .id;
    a.task_submit(batch, vec![TaskSpec::new(module.digest, "x")], now_micros())
        .await
        .unwrap();
    assert_eq!(heard.recv().await.unwrap(), Signal::Wake);

    let claimed = a
        .task_claim(ClaimParams {
            node: "a".into(),
            max: 1,
            now: now_micros(),
            lease: std::time::Duration::from_secs(30),
        })
        .await
        .unwrap()
        .tasks;
    assert_eq!(claimed.len(), 1);
    let task = &claimed[0];
    let done = Completion {
        task: task.id,
        lease_token: task.lease_token,
        node: "a".into(),
        slot: Some(0),
        started_at: now_micros(),
        ended_at: now_micros(),
        outcome: qhost::runtime::Outcome::Succeeded,
        error: None,
        output: Some(b"x".to_vec()),
        logs: Vec::new(),
        stdout: Vec::new(),
        stderr: Vec::new(),
    };
    a.task_complete(vec![done], now_micros()).await.unwrap();
    assert_eq!(heard.recv().await.unwrap(), Signal::Batches(vec![batch]));
    // A node does not hear itself (it already knows): of all the above, `a` hears only
    // what `b` does next, which reaches it after everything `a` sent.
    b.group_set_limit("g".into(), 2).await.unwrap();
    assert_eq!(own.recv().await.unwrap(), Signal::Wake);
    assert!(own.try_recv().is_err());
    assert!(heard.try_recv().is_err());
}
