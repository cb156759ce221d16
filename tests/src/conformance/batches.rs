//! Batches: a handle opens only its own batch; a released batch leaves nothing behind, and
//! its ids are never given again.

use super::*;

pub async fn handles_open_only_their_batch(store: Arc<dyn Store>) {
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

/// Releasing a batch removes all it owns, and the next batch opened gets a new id: its
/// handle reaches none of the released batch's tasks.
pub async fn a_released_batch_leaves_nothing_to_the_next(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let old = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(old, admitted(vec![task(m, 0, None), task(m, 1, None)]), T0)
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
        .task_submit(new, admitted(vec![task(m, 5, None)]), T0 + 3)
        .await
        .unwrap();
    assert_eq!(claim(&store, "n1", 1, T0 + 3).await.len(), 1);
}

/// A task id is never given again, even after the newest batch, holding the newest task,
/// was released.
pub async fn ids_are_never_reused(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let first = batch(&store, BatchSpec::default()).await;
    let old = store
        .task_submit(first, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap()[0];
    assert_eq!(store.batch_cancel(first, T0).await.unwrap(), 1);
    store.batch_release(first).await.unwrap();
    let second = batch(&store, BatchSpec::default()).await;
    let new = store
        .task_submit(second, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap()[0];
    assert!(new > old, "task id {new} after the released {old}");
    assert!(
        second > first,
        "batch id {second} after the released {first}"
    );
}
