//! Claim order: priorities of tasks and batches, and fairness between batches.

use super::*;

pub async fn priority_orders_claims_and_can_change(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let with_priority = |p| TaskSpec {
        priority: Some(p),
        ..task(m, 0, None)
    };
    let t = store
        .task_submit(
            b,
            admitted(vec![
                with_priority(0),
                with_priority(5),
                with_priority(1),
                with_priority(0),
            ]),
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
        .task_submit(b2, admitted(vec![task(m, 0, None), task(m, 0, None)]), T0)
        .await
        .unwrap();
    let early = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(early, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap();
    assert_eq!(store.batch_set_priority(b2, 4).await.unwrap(), 2);
    assert_eq!(ids(&claim(&store, "n1", 2, T0).await), late);
}

pub async fn a_later_small_batch_is_not_starved(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let big = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(
            big,
            admitted((0..1000).map(|_| task(m, 0, None)).collect()),
            T0,
        )
        .await
        .unwrap();
    // The big batch has been running a while when the small one arrives.
    let running = claim(&store, "n1", 100, T0).await;
    complete(&store, &running, Outcome::Succeeded, T0 + 1).await;
    let small = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(
            small,
            admitted((0..10).map(|_| task(m, 0, None)).collect()),
            T0 + 2,
        )
        .await
        .unwrap();
    let next = claim(&store, "n1", 20, T0 + 3).await;
    let from_small = next.iter().filter(|t| t.batch == small).count();
    assert_eq!(
        from_small, 10,
        "the small batch shares the slots instead of waiting for 900 tasks"
    );
}
