//! Limits on how many tasks run at once: a group's, which hold back only its own tasks,
//! and a batch's.

use super::*;

pub async fn groups_limit_running_tasks_without_blocking_others(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let ids_g = store
        .task_submit(
            b,
            admitted((0..3).map(|_| task(m, 0, Some("g"))).collect()),
            T0,
        )
        .await
        .unwrap();
    let free = store
        .task_submit(b, admitted(vec![task(m, 0, None), task(m, 0, None)]), T0)
        .await
        .unwrap();
    let first = claim(&store, "n1", 10, T0).await;
    assert_eq!(
        ids(&first),
        vec![ids_g[0], free[0], free[1]],
        "one of the group, and everything else"
    );
    let group = store.group_get("g".into()).await.unwrap();
    assert_eq!((group.limit, group.running, group.pending), (1, 1, 2));
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
        .task_submit(
            b,
            admitted((0..5).map(|_| task(m, 0, Some("wide"))).collect()),
            T0,
        )
        .await
        .unwrap();
    assert_eq!(claim(&store, "n1", 10, T0 + 3).await.len(), 3);
}

pub async fn a_long_group_at_the_head_holds_up_nothing_behind_it(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    // More tasks of one group than any claim reads in one go, then a few others.
    let long = store
        .task_submit(
            b,
            admitted((0..3000).map(|_| task(m, 0, Some("long"))).collect()),
            T0,
        )
        .await
        .unwrap();
    let behind = store
        .task_submit(
            b,
            admitted(vec![
                task(m, 0, Some("a")),
                task(m, 0, None),
                task(m, 0, Some("a")),
                task(m, 0, Some("b")),
            ]),
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

pub async fn batch_limits_bound_a_batch(store: Arc<dyn Store>) {
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
        .task_submit(
            limited,
            admitted((0..5).map(|_| task(m, 0, None)).collect()),
            T0,
        )
        .await
        .unwrap();
    store
        .task_submit(
            other,
            admitted((0..3).map(|_| task(m, 0, None)).collect()),
            T0,
        )
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
