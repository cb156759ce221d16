//! Pauses and limits changed after the fact: a paused group or batch holds its tasks that
//! have not started (they show as held) and keeps its limit for its resume, after which
//! its tasks run in the order they had; a limit of 0 holds them as a pause does; a
//! batch's `max_parallel` may change after it opened.

use super::*;

async fn state(store: &Arc<dyn Store>, task: TaskId) -> TaskState {
    store.task_get(task).await.unwrap().state
}

pub async fn a_paused_group_holds_its_tasks_and_resumes_in_order(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store.group_set_limit("g".into(), 2).await.unwrap();
    let grouped = store
        .task_submit(
            b,
            admitted((0..4).map(|_| task(m, 0, Some("g"))).collect()),
            T0,
        )
        .await
        .unwrap();
    let free = store
        .task_submit(b, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap();
    store.group_set_paused("g".into(), true).await.unwrap();
    let group = store.group_get("g".into()).await.unwrap();
    assert_eq!(
        (group.limit, group.paused, group.pending),
        (2, true, 4),
        "a paused group keeps its limit"
    );
    assert_eq!(state(&store, grouped[0]).await, TaskState::Held);
    assert_eq!(state(&store, free[0]).await, TaskState::Ready);
    let progress = store.batch_get(b).await.unwrap().progress;
    assert_eq!((progress.held, progress.ready), (4, 1));
    assert_eq!(store.task_counts().await.unwrap().held, 4);
    assert_eq!(
        ids(&claim(&store, "n1", 10, T0).await),
        free,
        "only what the pause does not hold"
    );

    // A limit set while paused is kept for the resume.
    store.group_set_limit("g".into(), 3).await.unwrap();
    assert!(claim(&store, "n1", 10, T0).await.is_empty());
    store.group_set_paused("g".into(), false).await.unwrap();
    let group = store.group_get("g".into()).await.unwrap();
    assert_eq!((group.limit, group.paused), (3, false));
    let resumed: Vec<TaskId> = claim(&store, "n1", 10, T0)
        .await
        .iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(resumed, grouped[..3], "in the order they had");

    // Pausing a group never seen makes it, with the default limit.
    store.group_set_paused("new".into(), true).await.unwrap();
    let group = store.group_get("new".into()).await.unwrap();
    assert_eq!((group.limit, group.paused), (1, true));
}

pub async fn a_group_limit_of_zero_holds_its_tasks(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(
            b,
            admitted(vec![task(m, 0, Some("g")), task(m, 0, Some("g"))]),
            T0,
        )
        .await
        .unwrap();
    store.group_set_limit("g".into(), 0).await.unwrap();
    assert_eq!(state(&store, t[0]).await, TaskState::Held);
    assert!(claim(&store, "n1", 10, T0).await.is_empty());
    let group = store.group_get("g".into()).await.unwrap();
    assert_eq!((group.limit, group.paused), (0, false));
    store.group_set_limit("g".into(), 1).await.unwrap();
    assert_eq!(ids(&claim(&store, "n1", 10, T0).await), [t[0]]);
}

pub async fn a_paused_batch_holds_its_tasks_and_keeps_its_limit(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(
        &store,
        BatchSpec {
            max_parallel: Some(2),
            ..BatchSpec::default()
        },
    )
    .await;
    let other = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(b, admitted((0..4).map(|_| task(m, 0, None)).collect()), T0)
        .await
        .unwrap();
    let o = store
        .task_submit(other, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap();
    store.batch_set_paused(b, true).await.unwrap();
    let info = store.batch_get(b).await.unwrap();
    assert_eq!(
        (info.paused, info.max_parallel, info.progress.held),
        (true, Some(2), 4)
    );
    assert_eq!(ids(&claim(&store, "n1", 10, T0).await), o);

    store.batch_set_max_parallel(b, Some(3)).await.unwrap();
    assert!(
        claim(&store, "n1", 10, T0).await.is_empty(),
        "a limit set while paused waits for the resume"
    );
    assert_eq!(store.batch_get(b).await.unwrap().max_parallel, Some(3));
    store.batch_set_paused(b, false).await.unwrap();
    let info = store.batch_get(b).await.unwrap();
    assert_eq!((info.paused, info.max_parallel), (false, Some(3)));
    let resumed: Vec<TaskId> = claim(&store, "n1", 10, T0)
        .await
        .iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(resumed, t[..3], "in the order they had");
    assert!(matches!(
        store.batch_set_paused(b + 1000, true).await,
        Err(StoreError::NotFound { .. })
    ));
}

/// A limit set on a batch that had none counts the tasks it has claimed already, and
/// one lifted lets the rest run.
pub async fn max_parallel_changes_after_open(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(b, admitted((0..6).map(|_| task(m, 0, None)).collect()), T0)
        .await
        .unwrap();
    let first = claim(&store, "n1", 2, T0).await;
    store.batch_set_max_parallel(b, Some(3)).await.unwrap();
    let second = claim(&store, "n1", 10, T0).await;
    assert_eq!(
        second.len(),
        1,
        "two of three were claimed before the limit"
    );
    complete(&store, &first, Outcome::Succeeded, T0 + 1).await;
    assert_eq!(claim(&store, "n1", 10, T0 + 2).await.len(), 2);
    store.batch_set_max_parallel(b, Some(0)).await.unwrap();
    assert_eq!(store.batch_get(b).await.unwrap().progress.held, 1);
    store.batch_set_max_parallel(b, None).await.unwrap();
    assert_eq!(claim(&store, "n1", 10, T0 + 3).await.len(), 1);
    assert_eq!(store.batch_get(b).await.unwrap().max_parallel, None);
}

/// A pause reaches the tasks a node reserved: handed back, they are held; a running one
/// runs on.
pub async fn a_pause_reaches_reserved_tasks(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(b, admitted(vec![task(m, 0, None), task(m, 0, None)]), T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 2, T0).await;
    start(&store, &claimed[..1], T0 + 1).await;
    store.batch_set_paused(b, true).await.unwrap();
    store
        .task_hand_back(vec![(claimed[1].id, claimed[1].lease_token)], T0 + 2)
        .await
        .unwrap();
    assert_eq!(state(&store, claimed[0].id).await, TaskState::Running);
    assert_eq!(state(&store, claimed[1].id).await, TaskState::Held);
    complete(&store, &claimed[..1], Outcome::Succeeded, T0 + 3).await;
    assert!(claim(&store, "n2", 2, T0 + 4).await.is_empty());
    store.batch_set_paused(b, false).await.unwrap();
    assert_eq!(ids(&claim(&store, "n2", 2, T0 + 5).await), [claimed[1].id]);
}

/// A held task is pending: its priority changes, and a cancel ends it at once.
pub async fn held_tasks_can_be_reprioritized_and_cancelled(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(b, admitted(vec![task(m, 0, None), task(m, 1, None)]), T0)
        .await
        .unwrap();
    store.batch_set_paused(b, true).await.unwrap();
    assert_eq!(state(&store, t[0]).await, TaskState::Held);
    store.task_set_priority(t[0], 4).await.unwrap();
    assert_eq!(store.task_get(t[0]).await.unwrap().priority, 4);
    assert_eq!(
        store.task_cancel(t[0], T0 + 1).await.unwrap(),
        CancelResult::Cancelled
    );
    assert_eq!(
        state(&store, t[1]).await,
        TaskState::Held,
        "its order closed: the next is at the gate, and held"
    );
}
