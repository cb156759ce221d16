//! The store conformance suite: every driver must pass every case. A driver's test file
//! calls [`run_all`] with a function that makes a fresh, empty store.
//!
//! The cases drive the store directly, with the clock in their hands, so that each
//! scheduling rule is checked at the claim itself.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use qhost::runtime::{Digest, LogLevel, LogLine, Outcome};
use qhost::store::*;

pub type MakeStore = dyn Fn() -> Pin<Box<dyn Future<Output = Arc<dyn Store>> + Send>> + Send + Sync;

type Case = fn(Arc<dyn Store>) -> Pin<Box<dyn Future<Output = ()> + Send>>;

macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        const CASES: &[(&str, Case)] = &[$((stringify!($name), |s| Box::pin($name(s)))),*];
    };
}

cases!(
    modules_are_content_addressed_and_kept_while_used,
    handles_open_only_their_batch,
    gates_hold_back_higher_orders,
    a_lower_order_than_one_started_is_refused,
    groups_limit_running_tasks_without_blocking_others,
    a_long_group_at_the_head_holds_up_nothing_behind_it,
    batch_limits_bound_a_batch,
    priority_orders_claims_and_can_change,
    a_later_small_batch_is_not_starved,
    concurrent_claimers_skip_group_held_tasks,
    stale_completions_change_nothing,
    failures_are_retried_with_backoff_then_fail,
    expired_leases_are_rescued,
    released_tasks_go_back_untouched,
    claimed_tasks_are_reserved_until_started,
    changes_reach_reserved_tasks,
    cancelling_pending_and_running_tasks,
    halting_batches_cancel_their_pending_tasks,
    release_and_prune_remove_ended_work,
    a_released_batch_leaves_nothing_to_the_next,
    ids_are_never_reused,
    completions_are_stored_within_bounds,
    the_execution_log_filters,
);

/// Runs every case on a fresh store from `make`.
pub async fn run_all(make: &MakeStore) {
    for (name, case) in CASES {
        let store = make().await;
        let run = tokio::spawn(case(store));
        if let Err(err) = run.await {
            panic!("conformance case `{name}` failed: {err}");
        }
    }
}

const T0: Micros = 1_700_000_000_000_000;
const SECOND: Micros = 1_000_000;

fn module() -> Vec<u8> {
    std::fs::read(crate::guest("echo")).unwrap()
}

async fn setup(store: &Arc<dyn Store>) -> Digest {
    store
        .module_put(module(), Some("echo".into()), None, T0)
        .await
        .unwrap()
        .digest
}

async fn batch(store: &Arc<dyn Store>, spec: BatchSpec) -> BatchId {
    store.batch_open(spec, rand_hash(), T0).await.unwrap().id
}

fn rand_hash() -> [u8; 32] {
    let mut hash = [0u8; 32];
    getrandom::fill(&mut hash).unwrap();
    hash
}

fn task(module: Digest, order: i64, group: Option<&str>) -> TaskSpec {
    TaskSpec {
        order,
        group: group.map(String::from),
        max_attempts: 1,
        ..TaskSpec::new(module, "x")
    }
}

async fn claim(store: &Arc<dyn Store>, node: &str, max: usize, now: Micros) -> Vec<ClaimedTask> {
    claim_all(store, node, max, now).await.tasks
}

/// A claim with all it reports besides the tasks.
async fn claim_all(store: &Arc<dyn Store>, node: &str, max: usize, now: Micros) -> Claimed {
    store
        .task_claim(ClaimParams {
            node: node.into(),
            max,
            now,
            lease: Duration::from_secs(30),
        })
        .await
        .unwrap()
}

fn ids(tasks: &[ClaimedTask]) -> Vec<TaskId> {
    let mut ids: Vec<_> = tasks.iter().map(|t| t.id).collect();
    ids.sort();
    ids
}

fn completion(task: &ClaimedTask, outcome: Outcome, now: Micros) -> Completion {
    Completion {
        task: task.id,
        lease_token: task.lease_token,
        node: "n1".into(),
        slot: Some(0),
        started_at: now - 10,
        ended_at: now,
        outcome,
        error: (!outcome.is_success()).then(|| format!("ended {outcome}")),
        output: outcome.is_success().then(|| b"done".to_vec()),
        logs: Vec::new(),
        stdout: Vec::new(),
        stderr: Vec::new(),
    }
}

/// Marks claimed tasks started on their node's slots at `now`.
async fn start(store: &Arc<dyn Store>, tasks: &[ClaimedTask], now: Micros) {
    let starts = tasks
        .iter()
        .map(|t| Start {
            task: t.id,
            lease_token: t.lease_token,
            at: now,
        })
        .collect();
    store.task_start(starts).await.unwrap();
}

async fn complete(
    store: &Arc<dyn Store>,
    tasks: &[ClaimedTask],
    outcome: Outcome,
    now: Micros,
) -> CompleteResult {
    let completions = tasks.iter().map(|t| completion(t, outcome, now)).collect();
    store.task_complete(completions, now).await.unwrap()
}

async fn modules_are_content_addressed_and_kept_while_used(store: Arc<dyn Store>) {
    let first = store
        .module_put(module(), Some("echo".into()), Some("v1".into()), T0)
        .await
        .unwrap();
    let again = store
        .module_put(module(), None, None, T0 + 1)
        .await
        .unwrap();
    assert_eq!(first.digest, Digest::of(&module()));
    assert_eq!(again.digest, first.digest);
    assert_eq!(
        again.name.as_deref(),
        Some("echo"),
        "a re-add keeps the name"
    );
    assert_eq!(store.module_list().await.unwrap().len(), 1);
    assert_eq!(store.module_bytes(first.digest).await.unwrap(), module());

    let b = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(b, vec![task(first.digest, 0, None)], T0)
        .await
        .unwrap();
    let err = store.module_delete(first.digest).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict(_)), "{err}");
    let claimed = claim(&store, "n1", 1, T0).await;
    complete(&store, &claimed, Outcome::Succeeded, T0 + 1).await;
    store.module_delete(first.digest).await.unwrap();
    assert!(matches!(
        store.module_bytes(first.digest).await,
        Err(StoreError::NotFound { .. })
    ));
    let unknown = store
        .task_submit(b, vec![task(first.digest, 0, None)], T0)
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("does not exist"), "{unknown}");
}

async fn handles_open_only_their_batch(store: Arc<dyn Store>) {
    let hash = rand_hash();
    let info = store
        .batch_open(BatchSpec::default(), hash, T0)
        .await
        .unwrap();
    store.batch_authorize(info.id, hash).await.unwrap();
    assert!(matches!(
        store.batch_authorize(info.id, rand_hash()).await,
        Err(StoreError::Forbidden(_))
    ));
    assert!(matches!(
        store.batch_authorize(info.id + 1000, hash).await,
        Err(StoreError::NotFound { .. })
    ));
}

async fn gates_hold_back_higher_orders(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let submitted = store
        .task_submit(
            b,
            vec![
                task(m, 2, None),
                task(m, 1, None),
                task(m, 1, None),
                task(m, 3, None),
            ],
            T0,
        )
        .await
        .unwrap();
    let first = claim(&store, "n1", 10, T0).await;
    assert_eq!(ids(&first), vec![submitted[1], submitted[2]]);
    complete(&store, &first[..1], Outcome::Succeeded, T0 + 1).await;
    assert!(
        claim(&store, "n1", 10, T0 + 2).await.is_empty(),
        "order 2 started before order 1 ended"
    );
    complete(&store, &first[1..], Outcome::GuestError, T0 + 3).await;
    let second = claim(&store, "n1", 10, T0 + 4).await;
    assert_eq!(
        ids(&second),
        vec![submitted[0]],
        "a failed task ends its order too"
    );
    let progress = store.batch_get(b).await.unwrap().progress;
    assert_eq!(
        (
            progress.succeeded,
            progress.failed,
            progress.reserved,
            progress.waiting
        ),
        (1, 1, 1, 1)
    );
}

async fn a_lower_order_than_one_started_is_refused(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(b, vec![task(m, 5, None)], T0)
        .await
        .unwrap();
    // Order 3 arrives before order 5 started: it goes first.
    let three = store
        .task_submit(b, vec![task(m, 3, None)], T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 10, T0).await;
    assert_eq!(ids(&claimed), three);
    // Order 3 has started: 2 is refused, 3 and above are fine.
    let err = store
        .task_submit(b, vec![task(m, 3, None), task(m, 2, None)], T0)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("task 1: order 2 is lower than order 3"),
        "{err}"
    );
    assert_eq!(
        store.batch_get(b).await.unwrap().progress.total(),
        2,
        "nothing of a refused submission is stored"
    );
    store
        .task_submit(b, vec![task(m, 3, None)], T0)
        .await
        .unwrap();
}

async fn groups_limit_running_tasks_without_blocking_others(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let ids_g = store
        .task_submit(b, (0..3).map(|_| task(m, 0, Some("g"))).collect(), T0)
        .await
        .unwrap();
    let free = store
        .task_submit(b, vec![task(m, 0, None), task(m, 0, None)], T0)
        .await
        .unwrap();
    let first = claim(&store, "n1", 10, T0).await;
    assert_eq!(
        ids(&first),
        vec![ids_g[0], free[0], free[1]],
        "one of the group, and everything else"
    );
    let group = store.group_get("g".into()).await.unwrap();
    assert_eq!((group.limit, group.running, group.waiting), (1, 1, 2));
    assert!(claim(&store, "n1", 10, T0).await.is_empty());
    store.group_set_limit("g".into(), 2).await.unwrap();
    let second = claim(&store, "n1", 10, T0).await;
    assert_eq!(
        ids(&second),
        vec![ids_g[1]],
        "a raised limit is honoured at the next claim"
    );
    complete(&store, &first, Outcome::Succeeded, T0 + 1).await;
    assert_eq!(ids(&claim(&store, "n1", 10, T0 + 2).await), vec![ids_g[2]]);
    // A limit set before any task uses the group.
    store.group_set_limit("wide".into(), 3).await.unwrap();
    store
        .task_submit(b, (0..5).map(|_| task(m, 0, Some("wide"))).collect(), T0)
        .await
        .unwrap();
    assert_eq!(claim(&store, "n1", 10, T0 + 3).await.len(), 3);
}

async fn a_long_group_at_the_head_holds_up_nothing_behind_it(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    // More tasks of one group than any claim reads in one go, then a few others.
    let long = store
        .task_submit(b, (0..3000).map(|_| task(m, 0, Some("long"))).collect(), T0)
        .await
        .unwrap();
    let behind = store
        .task_submit(
            b,
            vec![
                task(m, 0, Some("a")),
                task(m, 0, None),
                task(m, 0, Some("a")),
                task(m, 0, Some("b")),
            ],
            T0,
        )
        .await
        .unwrap();
    let first = claim(&store, "n1", 10, T0).await;
    assert_eq!(
        ids(&first),
        vec![long[0], behind[0], behind[1], behind[3]],
        "the head of the long group, and the first of everything behind it"
    );
    complete(&store, &first, Outcome::Succeeded, T0 + 1).await;
    assert_eq!(
        ids(&claim(&store, "n1", 10, T0 + 2).await),
        vec![long[1], behind[2]]
    );
}

async fn batch_limits_bound_a_batch(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let limited = batch(
        &store,
        BatchSpec {
            max_parallel: Some(2),
            ..BatchSpec::default()
        },
    )
    .await;
    let other = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(limited, (0..5).map(|_| task(m, 0, None)).collect(), T0)
        .await
        .unwrap();
    store
        .task_submit(other, (0..3).map(|_| task(m, 0, None)).collect(), T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 10, T0).await;
    let from_limited = claimed.iter().filter(|t| t.batch == limited).count();
    assert_eq!((from_limited, claimed.len()), (2, 5));
    complete(&store, &claimed[..1], Outcome::Succeeded, T0 + 1).await;
    let more = claim(&store, "n1", 10, T0 + 2).await;
    assert_eq!(
        more.iter().filter(|t| t.batch == limited).count(),
        usize::from(claimed[0].batch == limited)
    );
}

async fn priority_orders_claims_and_can_change(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let with_priority = |p| TaskSpec {
        priority: Some(p),
        ..task(m, 0, None)
    };
    let t = store
        .task_submit(
            b,
            vec![
                with_priority(0),
                with_priority(5),
                with_priority(1),
                with_priority(0),
            ],
            T0,
        )
        .await
        .unwrap();
    store.task_set_priority(t[3], 9).await.unwrap();
    let claimed = claim(&store, "n1", 4, T0).await;
    let order: Vec<_> = claimed.iter().map(|c| c.id).collect();
    assert_eq!(order, vec![t[3], t[1], t[2], t[0]]);
    start(&store, &claimed, T0).await;
    let err = store.task_set_priority(t[0], 3).await.unwrap_err();
    assert!(err.to_string().contains("has not started"), "{err}");

    let b2 = batch(&store, BatchSpec::default()).await;
    let late = store
        .task_submit(b2, vec![task(m, 0, None), task(m, 0, None)], T0)
        .await
        .unwrap();
    let early = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(early, vec![task(m, 0, None)], T0)
        .await
        .unwrap();
    assert_eq!(store.batch_set_priority(b2, 4).await.unwrap(), 2);
    assert_eq!(ids(&claim(&store, "n1", 2, T0).await), late);
}

async fn a_later_small_batch_is_not_starved(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let big = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(big, (0..1000).map(|_| task(m, 0, None)).collect(), T0)
        .await
        .unwrap();
    // The big batch has been running a while when the small one arrives.
    let running = claim(&store, "n1", 100, T0).await;
    complete(&store, &running, Outcome::Succeeded, T0 + 1).await;
    let small = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(small, (0..10).map(|_| task(m, 0, None)).collect(), T0 + 2)
        .await
        .unwrap();
    let next = claim(&store, "n1", 20, T0 + 3).await;
    let from_small = next.iter().filter(|t| t.batch == small).count();
    assert_eq!(
        from_small, 10,
        "the small batch shares the slots instead of waiting for 900 tasks"
    );
}

/// The article's scenario: twelve tasks in submission order, odd ones in group `id % 4`,
/// two claimers asking for six at the same moment. Group-held tasks are skipped.
async fn concurrent_claimers_skip_group_held_tasks(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let specs = (1..=12)
        .map(|i| {
            let key = format!("g{}", i % 4);
            task(m, 0, (i % 2 == 1).then_some(key.as_str()))
        })
        .collect();
    let t = store.task_submit(b, specs, T0).await.unwrap();
    let (a, b_) = tokio::join!(claim(&store, "a", 6, T0), claim(&store, "b", 6, T0));
    let mut got: Vec<_> = ids(&a).into_iter().chain(ids(&b_)).collect();
    got.sort();
    let position = |id: TaskId| t.iter().position(|&x| x == id).unwrap() + 1;
    let positions: Vec<_> = got.iter().map(|&id| position(id)).collect();
    assert_eq!(positions, vec![1, 2, 3, 4, 6, 8, 10, 12]);
    assert_eq!(a.len() + b_.len(), 8);
}

async fn stale_completions_change_nothing(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(b, vec![task(m, 0, None)], T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 1, T0).await;
    let mut wrong = completion(&claimed[0], Outcome::Succeeded, T0 + 1);
    wrong.lease_token += 1;
    let result = store.task_complete(vec![wrong], T0 + 1).await.unwrap();
    assert_eq!(result.stale, 1);
    assert_eq!(
        store.task_get(claimed[0].id).await.unwrap().state,
        TaskState::Reserved
    );
    complete(&store, &claimed, Outcome::Succeeded, T0 + 2).await;
    let twice = complete(&store, &claimed, Outcome::GuestError, T0 + 3).await;
    assert_eq!(twice.stale, 1, "a duplicate completion is ignored");
    let info = store.task_get(claimed[0].id).await.unwrap();
    assert_eq!(
        (info.state, info.outcome),
        (TaskState::Succeeded, Some(Outcome::Succeeded))
    );
    assert_eq!(
        store.task_output(claimed[0].id).await.unwrap().unwrap(),
        b"done"
    );
    let log = store
        .attempt_list(AttemptFilter {
            task: Some(claimed[0].id),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(log.len(), 1);
}

async fn failures_are_retried_with_backoff_then_fail(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let spec = TaskSpec {
        max_attempts: 2,
        backoff: Duration::from_secs(10),
        ..task(m, 0, None)
    };
    let id = store.task_submit(b, vec![spec], T0).await.unwrap()[0];
    let first = claim(&store, "n1", 1, T0).await;
    let result = complete(&store, &first, Outcome::Trap, T0 + 1).await;
    assert_eq!(result.retried, 1);
    let early = claim_all(&store, "n1", 1, T0 + 2).await;
    assert!(early.tasks.is_empty(), "retried before its backoff");
    let due = early
        .next_due
        .expect("the claim says when the retry is due");
    assert!(
        (T0 + 1 + 5 * SECOND..=T0 + 1 + 10 * SECOND).contains(&due),
        "backoff {}",
        due - T0
    );
    let second = claim(&store, "n1", 1, due).await;
    assert_eq!((second[0].id, second[0].attempt), (id, 2));
    complete(&store, &second, Outcome::Timeout, due + 1).await;
    let info = store.task_get(id).await.unwrap();
    assert_eq!(
        (info.state, info.outcome, info.attempts),
        (TaskState::Failed, Some(Outcome::Timeout), 2)
    );
    let log = store
        .attempt_list(AttemptFilter {
            task: Some(id),
            ..Default::default()
        })
        .await
        .unwrap();
    let outcomes: Vec<_> = log.iter().map(|(_, a)| (a.attempt, a.outcome)).collect();
    assert_eq!(outcomes, vec![(1, Outcome::Trap), (2, Outcome::Timeout)]);
}

async fn expired_leases_are_rescued(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    store.group_set_limit("g".into(), 1).await.unwrap();
    let b = batch(
        &store,
        BatchSpec {
            max_parallel: Some(1),
            ..BatchSpec::default()
        },
    )
    .await;
    let spec = TaskSpec {
        max_attempts: 2,
        backoff: Duration::ZERO,
        ..task(m, 0, Some("g"))
    };
    let id = store
        .task_submit(b, vec![spec.clone(), spec], T0)
        .await
        .unwrap()[0];
    let first = claim(&store, "dead", 5, T0).await;
    assert_eq!(first.len(), 1);
    // Renewed leases are not rescued; expired ones are.
    let renewed = store
        .lease_renew("dead".into(), T0 + 60 * SECOND)
        .await
        .unwrap();
    assert!(renewed.is_empty());
    assert_eq!(
        store
            .lease_rescue(None, T0 + 40 * SECOND)
            .await
            .unwrap()
            .retried,
        0
    );
    let rescued = store.lease_rescue(None, T0 + 61 * SECOND).await.unwrap();
    assert_eq!(rescued.retried, 1);
    let log = store
        .attempt_list(AttemptFilter {
            task: Some(id),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(log[0].1.outcome, Outcome::Lost);
    assert_eq!(log[0].1.node, "dead");
    // The group and batch slots were released with it.
    let again = claim(&store, "alive", 5, T0 + 62 * SECOND).await;
    assert_eq!(again.len(), 1);
    let late = complete(&store, &first, Outcome::Succeeded, T0 + 63 * SECOND).await;
    assert_eq!(late.stale, 1, "the dead node's late completion is refused");
    // A restarting node loses all its attempts at once.
    let result = store
        .lease_rescue(Some("alive".into()), T0 + 64 * SECOND)
        .await
        .unwrap();
    assert_eq!(result.ended.len() + result.retried, 1);
}

async fn released_tasks_go_back_untouched(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let id = store
        .task_submit(b, vec![task(m, 0, Some("g"))], T0)
        .await
        .unwrap()[0];
    let claimed = claim(&store, "n1", 1, T0).await;
    store
        .task_release(vec![(id, claimed[0].lease_token)], T0)
        .await
        .unwrap();
    let info = store.task_get(id).await.unwrap();
    assert_eq!((info.state, info.attempts), (TaskState::Ready, 0));
    assert_eq!(store.group_get("g".into()).await.unwrap().running, 0);
    assert_eq!(claim(&store, "n2", 1, T0).await[0].attempt, 1);
}

/// A claimed task is `reserved` until its node marks it started: views, counts and the
/// live view say `running` only of what runs.
async fn claimed_tasks_are_reserved_until_started(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(b, vec![task(m, 0, None), task(m, 0, None)], T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 2, T0).await;
    let progress = store.batch_get(b).await.unwrap().progress;
    assert_eq!((progress.reserved, progress.running), (2, 0));
    assert!(store.running_list().await.unwrap().is_empty());

    start(&store, &claimed[..1], T0 + 5).await;
    let mut stale = claimed[1].clone();
    stale.lease_token += 1;
    start(&store, &[stale], T0 + 5).await;
    let state = |id| {
        let store = store.clone();
        async move { store.task_get(id).await.unwrap().state }
    };
    assert_eq!(state(claimed[0].id).await, TaskState::Running);
    assert_eq!(
        state(claimed[1].id).await,
        TaskState::Reserved,
        "a start with a stale lease token changes nothing"
    );
    let counts = store.task_counts().await.unwrap();
    assert_eq!((counts.reserved, counts.running), (1, 1));
    let running = store.running_list().await.unwrap();
    assert_eq!(
        running
            .iter()
            .map(|r| (r.task, r.since))
            .collect::<Vec<_>>(),
        [(claimed[0].id, T0 + 5)]
    );

    // A claim after a hand-back starts unmarked again.
    store
        .task_release(vec![(claimed[1].id, claimed[1].lease_token)], T0 + 6)
        .await
        .unwrap();
    start(&store, &claimed[1..], T0 + 6).await;
    assert_eq!(state(claimed[1].id).await, TaskState::Ready);
    let again = claim(&store, "n2", 1, T0 + 7).await;
    assert_eq!(state(again[0].id).await, TaskState::Reserved);
}

/// A priority change and a cancellation reach a task that was claimed and not started:
/// its node hands it back, and it goes back ranked anew, or ends cancelled.
async fn changes_reach_reserved_tasks(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(
            b,
            vec![task(m, 0, Some("g")), task(m, 0, None), task(m, 1, None)],
            T0,
        )
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 2, T0).await;
    assert_eq!(ids(&claimed), [t[0], t[1]]);
    start(&store, &claimed[1..], T0 + 1).await;

    store.task_set_priority(t[0], 7).await.unwrap();
    let refused = store.task_set_priority(t[1], 7).await.unwrap_err();
    assert!(
        refused.to_string().contains("is running"),
        "a started task keeps its priority: {refused}"
    );
    assert_eq!(store.task_get(t[0]).await.unwrap().priority, 7);

    assert_eq!(
        store.task_cancel(t[0], T0 + 2).await.unwrap(),
        CancelResult::Requested
    );
    let handed = store
        .task_release(vec![(t[0], claimed[0].lease_token)], T0 + 3)
        .await
        .unwrap();
    assert_eq!(handed.ended, [(t[0], b)], "its cancellation ends it");
    let info = store.task_get(t[0]).await.unwrap();
    assert_eq!(
        (info.state, info.attempts, info.ended_at),
        (TaskState::Cancelled, 0, Some(T0 + 3))
    );
    assert_eq!(store.group_get("g".into()).await.unwrap().running, 0);
    assert!(
        store
            .attempt_list(AttemptFilter {
                task: Some(t[0]),
                ..Default::default()
            })
            .await
            .unwrap()
            .is_empty(),
        "an attempt that never started is not in the execution log"
    );
    complete(&store, &claimed[1..], Outcome::Succeeded, T0 + 4).await;
    assert_eq!(
        ids(&claim(&store, "n1", 2, T0 + 5).await),
        [t[2]],
        "the order closed by the cancellation opens the next"
    );
}

async fn cancelling_pending_and_running_tasks(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(
            b,
            vec![task(m, 0, None), task(m, 1, None), task(m, 1, None)],
            T0,
        )
        .await
        .unwrap();
    let running = claim(&store, "n1", 5, T0).await;
    assert_eq!(
        store.task_cancel(t[1], T0).await.unwrap(),
        CancelResult::Cancelled
    );
    assert_eq!(
        store.task_cancel(t[0], T0).await.unwrap(),
        CancelResult::Requested
    );
    assert_eq!(
        store
            .lease_renew("n1".into(), T0 + 30 * SECOND)
            .await
            .unwrap(),
        vec![t[0]]
    );
    complete(&store, &running, Outcome::Cancelled, T0 + 1).await;
    assert_eq!(
        store.task_get(t[0]).await.unwrap().state,
        TaskState::Cancelled
    );
    assert_eq!(
        store.task_cancel(t[0], T0).await.unwrap(),
        CancelResult::AlreadyEnded
    );
    // Order 1 opens once its cancelled sibling and order 0 have ended.
    assert_eq!(ids(&claim(&store, "n1", 5, T0 + 2).await), vec![t[2]]);
}

async fn halting_batches_cancel_their_pending_tasks(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(
        &store,
        BatchSpec {
            failure_policy: FailurePolicy::Halt,
            ..BatchSpec::default()
        },
    )
    .await;
    let t = store
        .task_submit(
            b,
            vec![
                task(m, 0, None),
                task(m, 0, None),
                task(m, 1, None),
                task(m, 2, None),
            ],
            T0,
        )
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 5, T0).await;
    complete(&store, &claimed[..1], Outcome::GuestError, T0 + 1).await;
    let progress = store.batch_get(b).await.unwrap().progress;
    assert_eq!(
        (progress.failed, progress.reserved, progress.cancelled),
        (1, 1, 2)
    );
    let cancelled = store.task_get(t[3]).await.unwrap();
    assert!(cancelled.error.unwrap().contains("halts on failure"));
    complete(&store, &claimed[1..], Outcome::Succeeded, T0 + 2).await;
    assert!(store.batch_get(b).await.unwrap().progress.is_done());
    assert!(claim(&store, "n1", 5, T0 + 3).await.is_empty());

    let c = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(c, vec![task(m, 0, None), task(m, 1, None)], T0)
        .await
        .unwrap();
    assert_eq!(store.batch_cancel(c, T0).await.unwrap(), 2);
    assert_eq!(store.batch_get(c).await.unwrap().progress.cancelled, 2);
}

async fn release_and_prune_remove_ended_work(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(b, vec![task(m, 0, None), task(m, 0, None)], T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 1, T0).await;
    let err = store.batch_release(b).await.unwrap_err();
    assert!(err.to_string().contains("have not ended"), "{err}");
    complete(&store, &claimed, Outcome::Succeeded, T0 + 1).await;
    let second = claim(&store, "n1", 1, T0 + 2).await;
    complete(&store, &second, Outcome::Succeeded, T0 + 100 * SECOND).await;
    assert_eq!(store.prune(T0 + 50 * SECOND, 10).await.unwrap(), 1);
    assert!(matches!(
        store.task_get(t[0]).await,
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(
        store.task_get(t[1]).await.unwrap().state,
        TaskState::Succeeded
    );
    store.batch_release(b).await.unwrap();
    assert!(matches!(
        store.batch_get(b).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(
        store
            .attempt_list(AttemptFilter::default())
            .await
            .unwrap()
            .is_empty()
    );
}

/// Releasing a batch removes all it owns, and the next batch opened gets a new id: its
/// handle reaches none of the released batch's tasks.
async fn a_released_batch_leaves_nothing_to_the_next(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let old = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(old, vec![task(m, 0, None), task(m, 1, None)], T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 1, T0).await;
    complete(&store, &claimed, Outcome::Succeeded, T0 + 1).await;
    assert_eq!(
        store.task_cancel(t[1], T0 + 2).await.unwrap(),
        CancelResult::Cancelled
    );
    store.batch_release(old).await.unwrap();

    let new = batch(&store, BatchSpec::default()).await;
    assert_ne!(
        new, old,
        "a released batch's id was given to the next batch"
    );
    let info = store.batch_get(new).await.unwrap();
    assert_eq!(
        info.progress,
        Progress::default(),
        "the new batch holds tasks"
    );
    assert_eq!(store.batch_open_count(new).await.unwrap(), 0);
    for id in t {
        assert!(
            matches!(store.task_get(id).await, Err(StoreError::NotFound { .. })),
            "task {id} of the released batch is still there"
        );
        assert!(matches!(
            store.task_output(id).await,
            Err(StoreError::NotFound { .. })
        ));
    }
    assert_eq!(store.task_counts().await.unwrap(), Progress::default());
    // The new batch's gate is its own: its first task is ready at once.
    store
        .task_submit(new, vec![task(m, 5, None)], T0 + 3)
        .await
        .unwrap();
    assert_eq!(claim(&store, "n1", 1, T0 + 3).await.len(), 1);
}

/// A task id is never given again, even after the newest batch, holding the newest task,
/// was released.
async fn ids_are_never_reused(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let first = batch(&store, BatchSpec::default()).await;
    let old = store
        .task_submit(first, vec![task(m, 0, None)], T0)
        .await
        .unwrap()[0];
    assert_eq!(store.batch_cancel(first, T0).await.unwrap(), 1);
    store.batch_release(first).await.unwrap();
    let second = batch(&store, BatchSpec::default()).await;
    let new = store
        .task_submit(second, vec![task(m, 0, None)], T0)
        .await
        .unwrap()[0];
    assert!(new > old, "task id {new} after the released {old}");
    assert!(
        second > first,
        "batch id {second} after the released {first}"
    );
}

/// What an attempt carries is stored within the store's bounds, whatever it is: an error
/// message past its bound is cut and says so, and a NUL character (which PostgreSQL's text
/// refuses) does not keep the record from being written.
async fn completions_are_stored_within_bounds(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(b, vec![task(m, 0, None)], T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 1, T0).await;
    let mut end = completion(&claimed[0], Outcome::GuestError, T0 + 1);
    end.error = Some(format!("a\0b{}", "x".repeat(1_000_000)));
    end.logs = vec![LogLine {
        at_micros: 1,
        level: LogLevel::Info,
        message: "nul \0 in a log line".into(),
    }];
    store.task_complete(vec![end], T0 + 1).await.unwrap();

    let info = store.task_get(claimed[0].id).await.unwrap();
    let attempt = &store.attempt_list(AttemptFilter::default()).await.unwrap()[0].1;
    for error in [info.error.unwrap(), attempt.error.clone().unwrap()] {
        assert!(
            error.len() <= bounds::ERROR,
            "{} bytes of error",
            error.len()
        );
        assert!(error.starts_with("a\u{FFFD}bxxx"), "{}", &error[..10]);
        assert!(
            error.ends_with(" bytes more]"),
            "{}",
            &error[error.len() - 30..]
        );
    }
    assert_eq!(attempt.logs[0].message, "nul \0 in a log line");
}

async fn the_execution_log_filters(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b1 = batch(&store, BatchSpec::default()).await;
    let b2 = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(b1, vec![task(m, 0, Some("g")), task(m, 0, None)], T0)
        .await
        .unwrap();
    store
        .task_submit(b2, vec![task(m, 0, None)], T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 3, T0).await;
    start(&store, &claimed, T0 + 1).await;
    let running = store.running_list().await.unwrap();
    assert_eq!(running.len(), 3);
    assert!(running.iter().all(|r| r.node == "n1" && r.since == T0 + 1));
    complete(&store, &claimed[..2], Outcome::Succeeded, T0 + SECOND).await;
    complete(&store, &claimed[2..], Outcome::GuestError, T0 + 2 * SECOND).await;
    let all = store.attempt_list(AttemptFilter::default()).await.unwrap();
    assert_eq!(all.len(), 3);
    let by = |filter: AttemptFilter| {
        let store = store.clone();
        async move { store.attempt_list(filter).await.unwrap().len() }
    };
    assert_eq!(
        by(AttemptFilter {
            batch: Some(b1),
            ..Default::default()
        })
        .await,
        2
    );
    assert_eq!(
        by(AttemptFilter {
            group: Some("g".into()),
            ..Default::default()
        })
        .await,
        1
    );
    assert_eq!(
        by(AttemptFilter {
            outcome: Some(Outcome::GuestError),
            ..Default::default()
        })
        .await,
        1
    );
    assert_eq!(
        by(AttemptFilter {
            since: Some(T0 + 2 * SECOND - 10),
            ..Default::default()
        })
        .await,
        1
    );
    assert_eq!(
        by(AttemptFilter {
            after: Some(all[0].0),
            limit: Some(1),
            ..Default::default()
        })
        .await,
        1
    );
    assert!(store.running_list().await.unwrap().is_empty());
}
