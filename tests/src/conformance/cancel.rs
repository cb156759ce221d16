//! Cancellation: of pending and running tasks, of a halting batch's pending tasks when one
//! fails, and of a whole batch.

use super::*;

pub async fn cancelling_pending_and_running_tasks(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(
            b,
            admitted(vec![task(m, 0, None), task(m, 1, None), task(m, 1, None)]),
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

pub async fn halting_batches_cancel_their_pending_tasks(store: Arc<dyn Store>) {
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
            admitted(vec![
                task(m, 0, None),
                task(m, 0, None),
                task(m, 1, None),
                task(m, 2, None),
            ]),
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
        .task_submit(c, admitted(vec![task(m, 0, None), task(m, 1, None)]), T0)
        .await
        .unwrap();
    assert_eq!(store.batch_cancel(c, T0).await.unwrap(), 2);
    assert_eq!(store.batch_get(c).await.unwrap().progress.cancelled, 2);
}
