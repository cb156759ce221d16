//! The webhook outbox: a batch's end and a task's final failure are written once, in the
//! transaction that ends the task, and only when a webhook listens; each event is claimed
//! for one try at a time, tried again when due, and gone once done.

use super::*;

const HOLD: Micros = 30 * SECOND;

fn hook() -> BatchHook {
    BatchHook {
        url: "http://127.0.0.1:9/hook".into(),
        sealed_secret: "sealed".into(),
    }
}

fn kinds(claim: &HookClaim) -> Vec<(HookKind, Option<TaskId>)> {
    claim.events.iter().map(|e| (e.kind, e.task)).collect()
}

pub async fn ends_and_final_failures_are_written_once_for_their_listeners(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    // No webhook anywhere: nothing is written.
    let plain = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(plain, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap();
    let done = complete(
        &store,
        &claim(&store, "n1", 1, T0).await,
        Outcome::Trap,
        T0 + 1,
    )
    .await;
    assert!(!done.hooked);
    let none = store.hook_claim(T0 + 2, T0 + HOLD, 10, true).await.unwrap();
    assert!(none.events.is_empty() && none.next_due.is_none());

    // A batch with its own: a retried failure is not final; two final ones, then its end.
    let hooked = batch(
        &store,
        BatchSpec {
            webhook: Some(hook()),
            ..BatchSpec::default()
        },
    )
    .await;
    let twice = TaskSpec {
        max_attempts: 2,
        backoff: Duration::ZERO,
        ..task(m, 0, None)
    };
    let ids = store
        .task_submit(hooked, admitted(vec![twice, task(m, 0, None)]), T0)
        .await
        .unwrap();
    let first = claim(&store, "n1", 2, T0 + 3).await;
    let result = complete(&store, &first, Outcome::Trap, T0 + 4).await;
    assert_eq!(result.retried, 1);
    assert!(result.hooked, "the second task failed for good");
    let again = claim(&store, "n1", 1, T0 + 5).await;
    assert_eq!(again[0].id, ids[0]);
    assert!(complete(&store, &again, Outcome::Trap, T0 + 6).await.hooked);

    let claimed = store
        .hook_claim(T0 + 7, T0 + HOLD, 10, false)
        .await
        .unwrap();
    assert_eq!(
        kinds(&claimed),
        [
            (HookKind::TaskFailed, Some(ids[1])),
            (HookKind::TaskFailed, Some(ids[0])),
            (HookKind::BatchEnded, None),
        ]
    );
    for event in &claimed.events {
        assert_eq!((event.batch, event.tries), (hooked, 1));
        assert_eq!(event.hook.as_ref(), Some(&hook()));
        assert!(event.body.is_none());
    }
    assert_eq!(claimed.events[0].outcome.as_deref(), Some("trap"));
    assert_eq!(claimed.events[0].error.as_deref(), Some("ended trap"));

    // Held while tried: nobody claims them again until the hold ends.
    let held = store
        .hook_claim(T0 + 8, T0 + HOLD, 10, false)
        .await
        .unwrap();
    assert!(held.events.is_empty());
    assert_eq!(held.next_due, Some(T0 + HOLD));
    let (retried, rest) = claimed.events.split_first().unwrap();
    for event in rest {
        store.hook_done(event.id).await.unwrap();
    }
    store
        .hook_retry(retried.id, T0 + 9, b"{\"sent\":1}".to_vec())
        .await
        .unwrap();
    let second = store
        .hook_claim(T0 + 9, T0 + HOLD, 10, false)
        .await
        .unwrap();
    assert_eq!(second.events.len(), 1);
    assert_eq!(
        (second.events[0].id, second.events[0].tries),
        (retried.id, 2)
    );
    assert_eq!(second.events[0].body.as_deref(), Some(&b"{\"sent\":1}"[..]));
    store.hook_done(retried.id).await.unwrap();

    // The server's webhook hears of every batch, claimed only by a node that has it.
    store.webhook_server(true);
    let other = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(other, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap();
    let done = complete(
        &store,
        &claim(&store, "n1", 1, T0 + 10).await,
        Outcome::Succeeded,
        T0 + 11,
    )
    .await;
    assert!(done.hooked);
    let without = store
        .hook_claim(T0 + 12, T0 + HOLD, 10, false)
        .await
        .unwrap();
    assert!(without.events.is_empty());
    let with = store
        .hook_claim(T0 + 12, T0 + HOLD, 10, true)
        .await
        .unwrap();
    assert_eq!(kinds(&with), [(HookKind::BatchEnded, None)]);
    assert_eq!(
        (with.events[0].batch, with.events[0].hook.clone()),
        (other, None)
    );
}

pub async fn a_batch_ended_by_cancelling_is_written_too(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let spec = BatchSpec {
        webhook: Some(hook()),
        ..BatchSpec::default()
    };
    // A pending task cancelled alone, and a batch cancelled whole.
    let one = batch(&store, spec.clone()).await;
    let id = store
        .task_submit(one, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap()[0];
    store.task_cancel(id, T0 + 1).await.unwrap();
    let whole = batch(&store, spec).await;
    store
        .task_submit(
            whole,
            admitted(vec![task(m, 0, None), task(m, 1, None)]),
            T0,
        )
        .await
        .unwrap();
    store.batch_cancel(whole, T0 + 2).await.unwrap();
    let claimed = store
        .hook_claim(T0 + 3, T0 + HOLD, 10, false)
        .await
        .unwrap();
    let ended: Vec<(HookKind, BatchId)> =
        claimed.events.iter().map(|e| (e.kind, e.batch)).collect();
    assert_eq!(
        ended,
        [(HookKind::BatchEnded, one), (HookKind::BatchEnded, whole)]
    );
}

pub async fn a_batch_keeps_a_bounded_number_of_events_waiting(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(
        &store,
        BatchSpec {
            webhook: Some(hook()),
            ..BatchSpec::default()
        },
    )
    .await;
    let count = MAX_PENDING_PER_BATCH as usize + 5;
    store
        .task_submit(b, admitted(vec![task(m, 0, None); count]), T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", count, T0 + 1).await;
    assert_eq!(claimed.len(), count);
    complete(&store, &claimed, Outcome::Trap, T0 + 2).await;
    let events = store
        .hook_claim(T0 + 3, T0 + HOLD, 10 * count, false)
        .await
        .unwrap()
        .events;
    let failed = events
        .iter()
        .filter(|e| e.kind == HookKind::TaskFailed)
        .count();
    let ended = events
        .iter()
        .filter(|e| e.kind == HookKind::BatchEnded)
        .count();
    // Failures stop at the bound; the batch's end is written all the same.
    assert_eq!((failed, ended), (MAX_PENDING_PER_BATCH as usize, 1));
}
