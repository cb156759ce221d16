//! Dependency edges: a task runs once every task it is after has ended, reads their
//! outputs, and is cancelled, run or skipped when one did not succeed, as its edge says;
//! a fan-in (`after: "*"`) waits for the rest of its batch. A cycle, an unknown key or an
//! edge to another batch is refused whole.

use std::collections::{HashMap, HashSet};

use super::*;

fn keyed(module: Digest, key: &str, after: &[&str]) -> TaskSpec {
    TaskSpec {
        key: Some(key.into()),
        after: after.iter().map(|k| Dep::key(*k)).collect(),
        ..task(module, 0, None)
    }
}

/// Ends claimed `task` with `outcome`, its output its key's bytes when it succeeds.
async fn end(store: &Arc<dyn Store>, task: &ClaimedTask, outcome: Outcome, now: Micros) {
    let mut c = completion(task, outcome, now);
    if outcome.is_success() {
        c.output = Some(format!("out-{}", task.id).into_bytes());
    }
    store.task_complete(vec![c], now).await.unwrap();
}

fn find(tasks: &[ClaimedTask], id: TaskId) -> &ClaimedTask {
    tasks.iter().find(|t| t.id == id).expect("claimed")
}

async fn state(store: &Arc<dyn Store>, id: TaskId) -> (TaskState, Option<Outcome>) {
    let info = store.task_get(id).await.unwrap();
    (info.state, info.outcome)
}

pub async fn edges_hold_dependents_until_their_dependencies_end(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let ids = store
        .task_submit(
            b,
            admitted(vec![
                keyed(m, "d", &["b", "c"]),
                keyed(m, "b", &["a"]),
                keyed(m, "c", &["a"]),
                keyed(m, "a", &[]),
            ]),
            T0,
        )
        .await
        .unwrap();
    let (d, bb, c, a) = (ids[0], ids[1], ids[2], ids[3]);
    assert_eq!(state(&store, d).await.0, TaskState::Waiting);
    let first = claim(&store, "n1", 10, T0).await;
    assert_eq!(super::ids(&first), vec![a], "only the root is ready");
    end(&store, &first[0], Outcome::Succeeded, T0 + 1).await;
    let second = claim(&store, "n1", 10, T0 + 2).await;
    assert_eq!(super::ids(&second), vec![bb, c]);
    end(&store, find(&second, bb), Outcome::Succeeded, T0 + 3).await;
    assert!(
        claim(&store, "n1", 10, T0 + 4).await.is_empty(),
        "d ran before c ended"
    );
    end(&store, find(&second, c), Outcome::Succeeded, T0 + 5).await;
    let third = claim(&store, "n1", 10, T0 + 6).await;
    assert_eq!(super::ids(&third), vec![d]);
    let inputs = store.task_inputs(d).await.unwrap();
    let read: Vec<(TaskId, Option<&str>, TaskState, Vec<u8>)> = inputs
        .iter()
        .map(|i| (i.task, i.key.as_deref(), i.state, i.output.clone()))
        .collect();
    assert_eq!(
        read,
        vec![
            (
                bb,
                Some("b"),
                TaskState::Succeeded,
                format!("out-{bb}").into_bytes()
            ),
            (
                c,
                Some("c"),
                TaskState::Succeeded,
                format!("out-{c}").into_bytes()
            ),
        ]
    );
    assert!(store.task_inputs(a).await.unwrap().is_empty());
}

pub async fn a_failed_dependency_cancels_runs_or_skips_as_its_edge_says(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let run = TaskSpec {
        on_failure: OnFailure::Run,
        ..keyed(m, "run", &["a"])
    };
    let skip = TaskSpec {
        after: vec![Dep {
            on: DepRef::Key("a".into()),
            on_failure: Some(OnFailure::Skip),
        }],
        ..keyed(m, "skip", &[])
    };
    let ids = store
        .task_submit(
            b,
            admitted(vec![
                keyed(m, "a", &[]),
                keyed(m, "cancel", &["a"]),
                run,
                skip,
                keyed(m, "after-skip", &["skip"]),
                keyed(m, "after-cancel", &["cancel"]),
            ]),
            T0,
        )
        .await
        .unwrap();
    let first = claim(&store, "n1", 10, T0).await;
    assert_eq!(super::ids(&first), vec![ids[0]]);
    end(&store, &first[0], Outcome::GuestError, T0 + 1).await;
    let cancelled = (TaskState::Cancelled, Some(Outcome::Cancelled));
    assert_eq!(
        state(&store, ids[1]).await,
        cancelled,
        "cancel: the default"
    );
    assert_eq!(
        state(&store, ids[3]).await,
        (TaskState::Cancelled, Some(Outcome::Skipped))
    );
    assert_eq!(
        state(&store, ids[5]).await,
        cancelled,
        "a cancelled dependency cancels in turn"
    );
    let error = store.task_get(ids[1]).await.unwrap().error.unwrap();
    assert!(error.contains(&format!("task {}", ids[0])), "{error}");
    let second = claim(&store, "n1", 10, T0 + 2).await;
    assert_eq!(
        super::ids(&second),
        vec![ids[2], ids[4]],
        "run runs anyway; a skipped dependency counts as ended well"
    );
    let seen = store.task_inputs(ids[2]).await.unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].state, TaskState::Failed);
    assert_eq!(seen[0].error.as_deref(), Some("ended guest-error"));
    for t in &second {
        end(&store, t, Outcome::Succeeded, T0 + 3).await;
    }
    let progress = store.batch_get(b).await.unwrap().progress;
    assert!(progress.is_done(), "{progress:?}");
    assert_eq!(
        (progress.succeeded, progress.failed, progress.cancelled),
        (2, 1, 3)
    );
}

pub async fn edges_and_orders_combine(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let at = |key: &str, order: i64, after: &[&str]| TaskSpec {
        order,
        ..keyed(m, key, after)
    };
    let ids = store
        .task_submit(
            b,
            admitted(vec![
                at("zero", 0, &[]),
                at("first", 1, &[]),
                at("second", 1, &["first"]),
            ]),
            T0,
        )
        .await
        .unwrap();
    let first = claim(&store, "n1", 10, T0).await;
    assert_eq!(super::ids(&first), vec![ids[0]]);
    end(&store, &first[0], Outcome::Succeeded, T0 + 1).await;
    let second = claim(&store, "n1", 10, T0 + 2).await;
    assert_eq!(
        super::ids(&second),
        vec![ids[1]],
        "the gate opens only for tasks whose dependencies ended"
    );
    end(&store, &second[0], Outcome::Succeeded, T0 + 3).await;
    assert_eq!(
        super::ids(&claim(&store, "n1", 10, T0 + 4).await),
        vec![ids[2]]
    );
    // A task after one of a higher order would wait for itself.
    let err = store
        .task_submit(
            b,
            admitted(vec![at("up", 4, &[]), at("down", 3, &["up"])]),
            T0,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("task 1: field `after` names key `up`, of order 4"),
        "{err}"
    );
}

pub async fn a_graph_with_a_cycle_an_unknown_key_or_another_batch_is_refused(
    store: Arc<dyn Store>,
) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let other = batch(&store, BatchSpec::default()).await;
    let elsewhere = store
        .task_submit(other, admitted(vec![keyed(m, "x", &[])]), T0)
        .await
        .unwrap()[0];
    let refusals: Vec<(Vec<TaskSpec>, String)> = vec![
        (
            vec![
                keyed(m, "a", &["c"]),
                keyed(m, "b", &["a"]),
                keyed(m, "c", &["b"]),
            ],
            "makes a cycle".into(),
        ),
        (
            vec![keyed(m, "a", &[]), keyed(m, "b", &["nope"])],
            format!("task 1: field `after` names key `nope`, which no task of batch {b} has"),
        ),
        (vec![keyed(m, "x", &[])], String::new()),
        (
            vec![TaskSpec {
                after: vec![Dep::task(elsewhere)],
                ..task(m, 0, None)
            }],
            format!("task 0: field `after` names task {elsewhere}, of batch {other}"),
        ),
        (
            vec![keyed(m, "a", &[]), keyed(m, "a", &[])],
            "task 1: key `a` is given to task 0".into(),
        ),
    ];
    for (specs, expected) in refusals {
        let submitted = store.task_submit(b, admitted(specs), T0).await;
        if expected.is_empty() {
            // A key taken in another batch is free in this one.
            submitted.unwrap();
            continue;
        }
        let err = submitted.unwrap_err().to_string();
        assert!(err.contains(&expected), "{err}");
    }
    assert_eq!(
        store.batch_get(b).await.unwrap().progress.total(),
        1,
        "nothing of a refused submission is stored"
    );
    let err = store
        .task_submit(b, admitted(vec![keyed(m, "x", &[])]), T0)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("task 0: key `x` is taken in batch"), "{err}");
}

pub async fn a_fan_in_runs_after_the_rest_of_its_batch(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let fan_in = TaskSpec {
        fan_in: true,
        on_failure: OnFailure::Run,
        ..keyed(m, "all", &[])
    };
    let ids = store
        .task_submit(
            b,
            admitted(vec![keyed(m, "a", &[]), keyed(m, "b", &["a"]), fan_in]),
            T0,
        )
        .await
        .unwrap();
    // Tasks submitted later go before it too.
    let later = store
        .task_submit(b, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap()[0];
    let first = claim(&store, "n1", 10, T0).await;
    assert_eq!(super::ids(&first), vec![ids[0], later]);
    end(&store, find(&first, ids[0]), Outcome::Succeeded, T0 + 1).await;
    end(&store, find(&first, later), Outcome::GuestError, T0 + 1).await;
    let second = claim(&store, "n1", 10, T0 + 2).await;
    assert_eq!(super::ids(&second), vec![ids[1]]);
    end(&store, &second[0], Outcome::Succeeded, T0 + 3).await;
    let third = claim(&store, "n1", 10, T0 + 4).await;
    assert_eq!(super::ids(&third), vec![ids[2]], "after every other task");
    let seen: Vec<(TaskId, TaskState)> = store
        .task_inputs(ids[2])
        .await
        .unwrap()
        .iter()
        .map(|i| (i.task, i.state))
        .collect();
    assert_eq!(
        seen,
        vec![
            (ids[0], TaskState::Succeeded),
            (ids[1], TaskState::Succeeded),
            (later, TaskState::Failed),
        ]
    );
    let err = store
        .task_submit(b, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("has started: no task can be added before it"),
        "{err}"
    );
}

pub async fn edges_to_stored_tasks_settle_as_they_ended(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let roots = store
        .task_submit(
            b,
            admitted(vec![keyed(m, "ok", &[]), keyed(m, "bad", &[])]),
            T0,
        )
        .await
        .unwrap();
    let first = claim(&store, "n1", 10, T0).await;
    end(&store, find(&first, roots[0]), Outcome::Succeeded, T0 + 1).await;
    end(&store, find(&first, roots[1]), Outcome::GuestError, T0 + 1).await;
    let later = store
        .task_submit(
            b,
            admitted(vec![
                keyed(m, "after-ok", &["ok"]),
                keyed(m, "after-bad", &["bad"]),
                TaskSpec {
                    after: vec![Dep::task(roots[1])],
                    on_failure: OnFailure::Run,
                    ..task(m, 0, None)
                },
            ]),
            T0 + 2,
        )
        .await
        .unwrap();
    assert_eq!(
        state(&store, later[1]).await,
        (TaskState::Cancelled, Some(Outcome::Cancelled)),
        "after a task that already failed: cancelled at once"
    );
    let second = claim(&store, "n1", 10, T0 + 3).await;
    assert_eq!(super::ids(&second), vec![later[0], later[2]]);
}

pub async fn a_retried_dependency_holds_its_dependents_again(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let ids = store
        .task_submit(
            b,
            admitted(vec![
                keyed(m, "a", &[]),
                keyed(m, "other", &[]),
                TaskSpec {
                    on_failure: OnFailure::Run,
                    ..keyed(m, "after", &["a", "other"])
                },
            ]),
            T0,
        )
        .await
        .unwrap();
    let first = claim(&store, "n1", 10, T0).await;
    end(&store, find(&first, ids[0]), Outcome::GuestError, T0 + 1).await;
    let retried = store
        .task_retry(TaskSelect {
            task: Some(ids[0]),
            ..TaskSelect::default()
        })
        .await
        .unwrap();
    assert_eq!(retried, 1);
    end(&store, find(&first, ids[1]), Outcome::Succeeded, T0 + 2).await;
    let second = claim(&store, "n1", 10, T0 + 3).await;
    assert_eq!(
        super::ids(&second),
        vec![ids[0]],
        "its dependent waits for the retried task's new end"
    );
    end(&store, &second[0], Outcome::Succeeded, T0 + 4).await;
    assert_eq!(
        super::ids(&claim(&store, "n1", 10, T0 + 5).await),
        vec![ids[2]]
    );
    let seen = store.task_inputs(ids[2]).await.unwrap();
    assert!(
        seen.iter().all(|i| i.state == TaskState::Succeeded),
        "{seen:?}"
    );
}

/// Diamonds in a row, laid out as `qhost bench --graph` lays them: each layer of tasks
/// waits for the join before it, each join for its whole layer. Ended a few at a time by
/// reports that also claim, as a node's writer sends them: each claim takes as many tasks
/// as are ready and its free slots allow, and none whose dependencies have not all ended.
pub async fn diamonds_in_a_row_drain_through_reports_that_claim(store: Arc<dyn Store>) {
    const WIDTH: usize = 10;
    const DIAMONDS: usize = 3;
    const SLOTS: usize = 4;
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    // Each task's key, and the keys it waits for, in submission order.
    let mut graph: Vec<(String, Vec<String>)> = Vec::new();
    for d in 0..DIAMONDS {
        let layer: Vec<String> = (0..WIDTH).map(|w| format!("s{d}-{w}")).collect();
        let join: Vec<String> = (d > 0).then(|| format!("j{}", d - 1)).into_iter().collect();
        graph.extend(layer.iter().map(|key| (key.clone(), join.clone())));
        graph.push((format!("j{d}"), layer));
    }
    let specs: Vec<TaskSpec> = graph
        .iter()
        .map(|(key, after)| {
            let after: Vec<&str> = after.iter().map(String::as_str).collect();
            keyed(m, key, &after)
        })
        .collect();
    let ids = store.task_submit(b, admitted(specs), T0).await.unwrap();
    let keys: HashMap<TaskId, String> = ids
        .into_iter()
        .zip(graph.iter().map(|(key, _)| key.clone()))
        .collect();
    let deps: HashMap<String, Vec<String>> = graph.into_iter().collect();

    let mut ended: HashSet<String> = HashSet::new();
    let mut held: Vec<ClaimedTask> = Vec::new();
    let mut now = T0;
    loop {
        let ending: Vec<ClaimedTask> = held.drain(..held.len().min(3)).collect();
        let ends: Vec<Completion> = ending
            .iter()
            .map(|t| completion(t, Outcome::Succeeded, now))
            .collect();
        ended.extend(ending.iter().map(|t| keys[&t.id].clone()));
        let running: HashSet<&String> = held.iter().map(|t| &keys[&t.id]).collect();
        let ready: HashSet<&String> = deps
            .iter()
            .filter(|(key, after)| {
                !ended.contains(*key)
                    && !running.contains(key)
                    && after.iter().all(|d| ended.contains(d))
            })
            .map(|(key, _)| key)
            .collect();
        now += 1;
        let params = ClaimParams {
            node: "n1".into(),
            max: SLOTS - held.len(),
            now,
            lease: Duration::from_secs(30),
        };
        let (_, claimed) = store
            .task_report_claim(Vec::new(), ends, params)
            .await
            .unwrap();
        let took: HashSet<&String> = claimed.tasks.iter().map(|t| &keys[&t.id]).collect();
        assert!(
            took.is_subset(&ready),
            "claimed {took:?}, but only {ready:?} had all their dependencies ended"
        );
        assert_eq!(
            took.len(),
            ready.len().min(SLOTS - held.len()),
            "claimed {took:?} of ready {ready:?} with {} slots free",
            SLOTS - held.len()
        );
        held.extend(claimed.tasks);
        if held.is_empty() {
            break;
        }
    }
    assert_eq!(ended.len(), keys.len(), "every task ran");
    let progress = store.batch_get(b).await.unwrap().progress;
    assert_eq!(progress.succeeded as usize, keys.len(), "{progress:?}");
}
