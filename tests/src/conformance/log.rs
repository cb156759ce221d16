//! The execution log: its filters and the running list; pruning and releasing ended work.

use super::*;

pub async fn the_execution_log_filters(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b1 = batch(&store, BatchSpec::default()).await;
    let b2 = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(
            b1,
            admitted(vec![task(m, 0, Some("g")), task(m, 0, None)]),
            T0,
        )
        .await
        .unwrap();
    store
        .task_submit(b2, admitted(vec![task(m, 0, None)]), T0)
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

pub async fn release_and_prune_remove_ended_work(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(b, admitted(vec![task(m, 0, None), task(m, 0, None)]), T0)
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
