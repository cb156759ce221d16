//! Delayed tasks: not due before their time, holding their batch's gate meanwhile, and in
//! their place by priority and submission order once due.

use super::*;

pub async fn a_delayed_task_holds_its_gate_and_keeps_its_place_once_due(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let due = T0 + 50 * SECOND;
    let delayed = TaskSpec {
        not_before: Some(due),
        ..task(m, 0, None)
    };
    let t = store
        .task_submit(b, admitted(vec![delayed, task(m, 1, None)]), T0)
        .await
        .unwrap();
    let (delayed, gated) = (t[0], t[1]);
    let info = store.task_get(delayed).await.unwrap();
    assert_eq!((info.state, info.due_at), (TaskState::Ready, Some(due)));
    assert!(
        claim(&store, "n1", 4, T0).await.is_empty(),
        "nothing is due: the delayed task waits, and holds its higher order at the gate"
    );
    assert_eq!(
        store.task_get(gated).await.unwrap().state,
        TaskState::Waiting
    );

    let later = store
        .task_submit(b, admitted(vec![task(m, 0, None)]), T0 + SECOND)
        .await
        .unwrap()[0];
    assert_eq!(
        ids(&claim(&store, "n1", 1, T0 + 2 * SECOND).await),
        [later],
        "a task due at once runs before a delayed one is due"
    );
    let mut again = store
        .task_submit(b, admitted(vec![task(m, 0, None)]), T0 + 3 * SECOND)
        .await
        .unwrap();
    let last = again.pop().unwrap();
    let first = claim(&store, "n1", 1, due).await;
    assert_eq!(
        ids(&first),
        [delayed],
        "once due, it goes before a task submitted after it"
    );
    assert_eq!(store.task_get(delayed).await.unwrap().due_at, None);
    assert_eq!(ids(&claim(&store, "n1", 1, due).await), [last]);
}
