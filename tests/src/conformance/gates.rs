//! Gates: a batch runs its orders one after another, and refuses a new task of an order
//! below one that has started.

use super::*;

pub async fn gates_hold_back_higher_orders(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let submitted = store
        .task_submit(
            b,
            admitted(vec![
                task(m, 2, None),
                task(m, 1, None),
                task(m, 1, None),
                task(m, 3, None),
            ]),
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

pub async fn a_lower_order_than_one_started_is_refused(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(b, admitted(vec![task(m, 5, None)]), T0)
        .await
        .unwrap();
    // Order 3 arrives before order 5 started: it goes first.
    let three = store
        .task_submit(b, admitted(vec![task(m, 3, None)]), T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 10, T0).await;
    assert_eq!(ids(&claimed), three);
    // Order 3 has started: 2 is refused, 3 and above are fine.
    let err = store
        .task_submit(b, admitted(vec![task(m, 3, None), task(m, 2, None)]), T0)
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
        .task_submit(b, admitted(vec![task(m, 3, None)]), T0)
        .await
        .unwrap();
}
