//! The store conformance suite on the PostgreSQL driver, each case in a fresh schema, and
//! what only a shared store does: notifications between nodes, concurrent migrations,
//! clock offsets.

use std::sync::Arc;

use qhost::store::postgres::PostgresStore;
use qhost::store::*;
use qhost_tests::admitted;
use qhost_tests::pg::TestDb;
use tokio::sync::{Semaphore, SemaphorePermit};

qhost_tests::conformance_tests!(fresh_store);

/// How many conformance stores are open at once, however many tests the harness runs in
/// parallel. A store may open 25 connections (16 durable, 8 bookkeeping, 1 listening):
/// three stay well within PostgreSQL's default `max_connections` of 100, leaving room
/// for this file's other tests.
const STORES_AT_ONCE: usize = 3;

/// A store on a schema of its own, dropped when the test ends.
async fn fresh_store() -> (Arc<dyn Store>, (TestDb, SemaphorePermit<'static>)) {
    static OPEN: Semaphore = Semaphore::const_new(STORES_AT_ONCE);
    let permit = OPEN.acquire().await.unwrap();
    let db = TestDb::new().await;
    let store = PostgresStore::connect(&db.url, "conformance")
        .await
        .unwrap();
    // The schema is dropped before the permit is given back.
    (Arc::new(store), (db, permit))
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
    a.task_submit(
        batch,
        admitted(vec![TaskSpec::new(module.digest, "x")]),
        now_micros(),
    )
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
    assert_eq!(
        heard.recv().await.unwrap(),
        Signal::Wake,
        "a claim that took all it asked for may leave work behind for idle nodes"
    );
    let task = &claimed[0];
    let done = Completion {
        defer: None,
        task: task.id,
        batch: task.batch,
        lease_token: task.lease_token,
        node: "a".into(),
        slot: Some(0),
        started_at: now_micros(),
        ended_at: now_micros(),
        cpu_micros: None,
        memory_mib_seconds: None,
        http_bytes: None,
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
    assert_eq!(own.recv().await.unwrap(), Signal::Reclaim);
    assert!(own.try_recv().is_err());
    assert!(heard.try_recv().is_err());
}

/// A submission the database refuses partway (a trigger here refuses its task's row, after
/// the batch's order was counted open in the same transaction) leaves nothing behind: the
/// batch counts no task and no usage, and a task submitted after it at a higher order runs
/// at once, with no order left open in front of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submission_refused_partway_leaves_nothing_behind() {
    let db = TestDb::new().await;
    let store = PostgresStore::connect(&db.url, "a").await.unwrap();
    let client = db.connect().await;
    client
        .batch_execute(
            "CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.input = 'boom'::bytea THEN RAISE EXCEPTION 'refused'; END IF;
                 RETURN NEW;
             END $$;
             CREATE TRIGGER refuse_boom BEFORE INSERT ON tasks
                 FOR EACH ROW EXECUTE FUNCTION refuse_boom();",
        )
        .await
        .unwrap();
    let bytes = std::fs::read(qhost_tests::guest("echo")).unwrap();
    let module = store.module_put(bytes, None, None, now_micros()).await;
    let digest = module.unwrap().digest;
    let batch = store
        .batch_open(BatchSpec::default(), [7; 32], now_micros())
        .await
        .unwrap()
        .id;

    let refused = store
        .task_submit(
            batch,
            admitted(vec![TaskSpec::new(digest, "boom")]),
            now_micros(),
        )
        .await;
    assert!(
        refused.is_err(),
        "the trigger refuses the task: {refused:?}"
    );
    let info = store.batch_get(batch).await.unwrap();
    assert_eq!(info.progress, Progress::default(), "{info:?}");
    assert_eq!(info.usage.tasks, 0, "{info:?}");

    let mut later = TaskSpec::new(digest, "ok");
    later.order = 1;
    let ids = store
        .task_submit(batch, admitted(vec![later]), now_micros())
        .await
        .unwrap();
    let claimed = store
        .task_claim(ClaimParams {
            node: "a".into(),
            max: 2,
            now: now_micros(),
            lease: std::time::Duration::from_secs(30),
        })
        .await
        .unwrap()
        .tasks;
    let claimed: Vec<TaskId> = claimed.iter().map(|t| t.id).collect();
    assert_eq!(
        claimed, ids,
        "nothing of the refused submission gates the batch"
    );
}

/// A database left by the previous schema version, with a task ready, one running on a
/// node that is gone and one waiting behind them, keeps all three through the upgrade:
/// the lost attempt is rescued and every task runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgraded_database_keeps_its_queue_and_leases() {
    let db = TestDb::new().await;
    let client = db.connect().await;
    let bytes = std::fs::read(qhost_tests::guest("echo")).unwrap();
    let digest = qhost::runtime::Digest::of(&bytes).to_hex();
    let past = now_micros() - 60_000_000;
    client
        .batch_execute(concat!(
            include_str!("../../host/src/store/postgres/migrations/0001_init.sql"),
            include_str!("../../host/src/store/postgres/migrations/0002_claim_indexes.sql"),
            "CREATE TABLE qhost_schema (version INT NOT NULL);
             INSERT INTO qhost_schema VALUES (2);"
        ))
        .await
        .unwrap();
    client
        .execute(
            "INSERT INTO modules (digest, size, bytes, added_at) VALUES ($1, $2, $3, $4)",
            &[&digest, &(bytes.len() as i64), &bytes, &past],
        )
        .await
        .unwrap();
    client
        .batch_execute(&format!(
            "INSERT INTO batches (id, handle_hash, priority, halt_on_failure, created_at, next_vseq)
                 VALUES (1, '\\x01', 0, FALSE, {past}, 3);
             INSERT INTO batch_orders VALUES (1, 0, 2), (1, 1, 1);
             INSERT INTO tasks (id, batch_id, module, input, ord, priority, vseq, state,
                     attempts, max_attempts, backoff_ms, limits, mounts, not_before,
                     submitted_at, claimed_at, lease_node, lease_token, lease_expires)
                 VALUES
                 (1, 1, '{digest}', 'ready', 0, 0, 0, 1, 0, 3, 0, '{{}}', '[]', 0, {past},
                  NULL, NULL, NULL, NULL),
                 (2, 1, '{digest}', 'running', 0, 0, 1, 2, 1, 3, 0, '{{}}', '[]', 0, {past},
                  {past}, 'gone', 42, {past}),
                 (3, 1, '{digest}', 'waiting', 1, 0, 2, 0, 0, 3, 0, '{{}}', '[]', 0, {past},
                  NULL, NULL, NULL, NULL);"
        ))
        .await
        .unwrap();
    drop(client);

    let store = PostgresStore::connect(&db.url, "n1").await.unwrap();
    // The ready queue knows when its tasks were submitted: a list of ready tasks reads it.
    let ready = TaskFilter {
        states: vec![TaskState::Ready],
        limit: 10,
        now: now_micros(),
        ..TaskFilter::default()
    };
    let page = store.task_list(ready).await.unwrap();
    let listed: Vec<_> = page.tasks.iter().map(|t| (t.id, t.submitted_at)).collect();
    assert_eq!(listed, [(1, past)], "the ready task, listed");
    assert_eq!(page.counts.ready, 1);
    let running = store.running_list().await.unwrap();
    assert_eq!(
        running.len(),
        1,
        "the running attempt is still leased: {running:?}"
    );
    assert_eq!((running[0].task, running[0].node.as_str()), (2, "gone"));
    let rescued = store.lease_rescue(None, now_micros()).await.unwrap();
    assert_eq!(rescued.retried, 1, "the lost attempt is retried");

    let mut ran = Vec::new();
    for order in [0, 1] {
        let claimed = store
            .task_claim(ClaimParams {
                node: "n1".into(),
                max: 10,
                now: now_micros(),
                lease: std::time::Duration::from_secs(30),
            })
            .await
            .unwrap()
            .tasks;
        assert!(claimed.iter().all(|t| t.order == order), "{claimed:?}");
        let done = claimed
            .iter()
            .map(|t| Completion {
                defer: None,
                task: t.id,
                batch: t.batch,
                lease_token: t.lease_token,
                node: "n1".into(),
                slot: Some(0),
                started_at: now_micros(),
                ended_at: now_micros(),
                cpu_micros: None,
                memory_mib_seconds: None,
                http_bytes: None,
                outcome: qhost::runtime::Outcome::Succeeded,
                error: None,
                output: Some(t.input.clone()),
                logs: Vec::new(),
                stdout: Vec::new(),
                stderr: Vec::new(),
            })
            .collect();
        store.task_complete(done, now_micros()).await.unwrap();
        ran.extend(claimed.iter().map(|t| t.id));
    }
    ran.sort_unstable();
    assert_eq!(ran, [1, 2, 3]);
    assert!(store.batch_get(1).await.unwrap().progress.is_done());
    assert_eq!(
        store.task_output(2).await.unwrap().as_deref(),
        Some(&b"running"[..])
    );
}

/// A claim waits only a moment for the counter of a tenant that another transaction holds
/// (another claim counting in it commits within a round trip or two), then leaves that
/// tenant's tasks queued and takes the rest; once the counter is free, they are claimed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_passes_over_a_tenant_whose_counter_another_transaction_holds() {
    let db = TestDb::new().await;
    let store = PostgresStore::connect(&db.url, "a").await.unwrap();
    let now = now_micros();
    let bytes = std::fs::read(qhost_tests::guest("echo")).unwrap();
    let module = store.module_put(bytes, None, None, now).await.unwrap();
    let tenant = store.tenant_add("t".into(), now).await.unwrap().id;
    let open = async |tenant| {
        let spec = BatchSpec {
            tenant,
            ..BatchSpec::default()
        };
        let batch = store.batch_open(spec, [tenant.map_or(1, |_| 2); 32], now);
        let batch = batch.await.unwrap().id;
        let tasks = vec![TaskSpec::new(module.digest, "x"); 2];
        store
            .task_submit(batch, admitted(tasks), now)
            .await
            .unwrap();
        batch
    };
    let of_tenant = open(Some(tenant)).await;
    let of_admin = open(None).await;
    let claim = async || {
        store
            .task_claim(ClaimParams {
                node: "a".into(),
                max: 4,
                now: now_micros(),
                lease: std::time::Duration::from_secs(30),
            })
            .await
            .unwrap()
    };

    let client = db.connect().await;
    client.batch_execute("BEGIN").await.unwrap();
    client
        .execute("SELECT 1 FROM tenants WHERE id = $1 FOR UPDATE", &[&tenant])
        .await
        .unwrap();
    let held = claim().await;
    let batches: Vec<BatchId> = held.tasks.iter().map(|t| t.batch).collect();
    assert_eq!(
        batches,
        [of_admin, of_admin],
        "the admin's tasks are taken alone"
    );
    assert!(held.contended, "the tenant's counter was held");

    client.batch_execute("ROLLBACK").await.unwrap();
    let freed = claim().await;
    let batches: Vec<BatchId> = freed.tasks.iter().map(|t| t.batch).collect();
    assert_eq!(
        batches,
        [of_tenant, of_tenant],
        "the tenant's tasks, once free"
    );
    let info = store.tenant_get(tenant).await.unwrap();
    assert_eq!(info.running, 2, "counted once, by the claim that took them");
}

/// A node restarting ends every attempt of its earlier run, even one whose row another
/// transaction holds at that moment (a backend of the killed process not yet gone): it
/// waits for the row rather than skip it, since it renews every lease under its name
/// and the skipped attempt's would never expire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarting_node_waits_for_the_rows_of_its_lost_attempts() {
    let db = TestDb::new().await;
    let store = Arc::new(PostgresStore::connect(&db.url, "n1").await.unwrap());
    let now = now_micros();
    let bytes = std::fs::read(qhost_tests::guest("echo")).unwrap();
    let module = store.module_put(bytes, None, None, now).await.unwrap();
    let batch = store.batch_open(BatchSpec::default(), [7; 32], now);
    let batch = batch.await.unwrap().id;
    let mut spec = TaskSpec::new(module.digest, "x");
    spec.backoff = std::time::Duration::ZERO;
    let ids = store.task_submit(batch, admitted(vec![spec]), now).await;
    let task = ids.unwrap()[0];
    let params = ClaimParams {
        node: "n1".into(),
        max: 1,
        now: now_micros(),
        lease: std::time::Duration::from_secs(30),
    };
    let claimed = store.task_claim(params.clone()).await.unwrap().tasks;
    assert_eq!(claimed.len(), 1);

    let holder = db.connect().await;
    holder.batch_execute("BEGIN").await.unwrap();
    holder
        .execute("SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE", &[&task])
        .await
        .unwrap();
    let holder_pid: i32 = holder
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    let restarted = store.clone();
    let mut rescue = tokio::spawn(async move {
        restarted
            .lease_rescue(Some("n1".into()), now_micros())
            .await
            .unwrap()
    });
    // Either the rescue waits behind the holder, or it ends without the task.
    let watcher = db.connect().await;
    let waits = async {
        loop {
            let blocked: i64 = watcher
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
                    &[&holder_pid],
                )
                .await
                .unwrap()
                .get(0);
            if blocked > 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::select! {
        () = waits => {}
        ended = &mut rescue => panic!("the rescue did not wait for the held row: {:?}", ended.unwrap()),
    }
    holder.batch_execute("ROLLBACK").await.unwrap();
    let rescued = rescue.await.unwrap();
    assert_eq!(rescued.retried, 1, "the lost attempt is ended: {rescued:?}");

    let params = ClaimParams {
        now: now_micros(),
        ..params
    };
    let again = store.task_claim(params).await.unwrap().tasks;
    let again: Vec<TaskId> = again.iter().map(|t| t.id).collect();
    assert_eq!(again, [task], "the task runs again");
}
