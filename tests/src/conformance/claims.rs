//! Claims: concurrent claimers, claimed tasks reserved until started, and tasks a node
//! hands back.

use super::*;

/// The article's scenario: twelve tasks in submission order, odd ones in group `id % 4`,
/// two claimers asking for six at the same moment. Group-held tasks are skipped.
pub async fn concurrent_claimers_skip_group_held_tasks(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let specs = (1..=12)
        .map(|i| {
            let key = format!("g{}", i % 4);
            task(m, 0, (i % 2 == 1).then_some(key.as_str()))
        })
        .collect();
    let t = store.task_submit(b, admitted(specs), T0).await.unwrap();
    let (a, b_) = tokio::join!(claim(&store, "a", 6, T0), claim(&store, "b", 6, T0));
    let mut got: Vec<_> = ids(&a).into_iter().chain(ids(&b_)).collect();
    got.sort();
    let position = |id: TaskId| t.iter().position(|&x| x == id).unwrap() + 1;
    let positions: Vec<_> = got.iter().map(|&id| position(id)).collect();
    assert_eq!(positions, vec![1, 2, 3, 4, 6, 8, 10, 12]);
    assert_eq!(a.len() + b_.len(), 8);
}

/// A task keeps the trace context it was submitted in, for each of its attempts; one
/// submitted without keeps none.
pub async fn a_claim_returns_the_trace_its_task_was_submitted_in(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_owned();
    let retried = TaskSpec {
        max_attempts: 2,
        backoff: Duration::from_secs(1),
        ..task(m, 0, None)
    };
    let traced = admitted(vec![retried]).with_trace(Some(trace.clone()));
    let traced = store.task_submit(b, traced, T0).await.unwrap();
    let plain = store
        .task_submit(b, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 2, T0).await;
    let trace_of =
        |tasks: &[ClaimedTask], id| tasks.iter().find(|t| t.id == id).unwrap().trace.clone();
    assert_eq!(trace_of(&claimed, traced[0]), Some(trace.clone()));
    assert_eq!(trace_of(&claimed, plain[0]), None);

    complete(&store, &claimed, Outcome::Trap, T0 + 1).await;
    let again = claim(&store, "n1", 2, T0 + 10 * SECOND).await;
    assert_eq!(ids(&again), traced, "the traced task is retried");
    assert_eq!(
        trace_of(&again, traced[0]),
        Some(trace),
        "its retry keeps the trace"
    );
}

/// A claimed task is `reserved` until its node marks it started: views, counts and the
/// live view say `running` only of what runs.
pub async fn claimed_tasks_are_reserved_until_started(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(b, admitted(vec![task(m, 0, None), task(m, 0, None)]), T0)
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
    assert_eq!(state_of(&store, claimed[0].id).await, TaskState::Running);
    assert_eq!(
        state_of(&store, claimed[1].id).await,
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
        .task_hand_back(vec![(claimed[1].id, claimed[1].lease_token)], T0 + 6)
        .await
        .unwrap();
    start(&store, &claimed[1..], T0 + 6).await;
    assert_eq!(state_of(&store, claimed[1].id).await, TaskState::Ready);
    let again = claim(&store, "n2", 1, T0 + 7).await;
    assert_eq!(state_of(&store, again[0].id).await, TaskState::Reserved);
}

pub async fn handed_back_tasks_go_back_untouched(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let id = store
        .task_submit(b, admitted(vec![task(m, 0, Some("g"))]), T0)
        .await
        .unwrap()[0];
    let claimed = claim(&store, "n1", 1, T0).await;
    store
        .task_hand_back(vec![(id, claimed[0].lease_token)], T0)
        .await
        .unwrap();
    let info = store.task_get(id).await.unwrap();
    assert_eq!((info.state, info.attempts), (TaskState::Ready, 0));
    assert_eq!(store.group_get("g".into()).await.unwrap().running, 0);
    assert_eq!(claim(&store, "n2", 1, T0).await[0].attempt, 1);
}

/// A priority change and a cancellation reach a task that was claimed and not started:
/// its node hands it back, and it goes back ranked anew, or ends cancelled.
pub async fn changes_reach_reserved_tasks(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(
            b,
            admitted(vec![
                task(m, 0, Some("g")),
                task(m, 0, None),
                task(m, 1, None),
            ]),
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
        .task_hand_back(vec![(t[0], claimed[0].lease_token)], T0 + 3)
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
