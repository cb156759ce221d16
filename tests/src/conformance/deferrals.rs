//! Back-pressure from tasks (`retry-after`): a deferred attempt puts its task back at the
//! time it asked without using an attempt, and holds its group until then, on every
//! claim; a task without a group is only delayed. Deferrals are bounded.

use qhost::scheduler::rules::{WaitingOn, waiting_on};

use super::*;

/// A `deferred` completion of `task` at `now`, asking to run again at `until`.
fn deferred(task: &ClaimedTask, now: Micros, until: Micros, most: u32) -> Completion {
    Completion {
        defer: Some(Defer { until, most }),
        ..completion(task, Outcome::Deferred, now)
    }
}

pub async fn a_deferral_holds_its_group_and_uses_no_attempt(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store.group_set_limit("api".into(), 10).await.unwrap();
    let api = store
        .task_submit(b, admitted(vec![task(m, 0, Some("api"))]), T0)
        .await
        .unwrap();
    let first = claim(&store, "n1", 10, T0).await;
    assert_eq!(ids(&first), api);
    // More of the group arrive while it runs, and a task of another group and one of none.
    let later = store
        .task_submit(
            b,
            admitted(vec![
                task(m, 0, Some("api")),
                task(m, 0, Some("other")),
                task(m, 0, None),
            ]),
            T0,
        )
        .await
        .unwrap();
    let until = T0 + 2 * SECOND;
    let result = store
        .task_complete(vec![deferred(&first[0], T0 + 10, until, 20)], T0 + 10)
        .await
        .unwrap();
    assert_eq!(result.retried, 1, "back in the queue");
    let info = store.task_get(api[0]).await.unwrap();
    assert_eq!(info.outcome, Some(Outcome::Deferred));
    assert_eq!(
        (info.attempts, info.max_attempts),
        (1, 2),
        "the attempt it made is not charged: one at most (max_attempts 1) is still left"
    );
    // Only the other group and the ungrouped task run during the hold.
    let during = claim_all(&store, "n1", 10, T0 + 20).await;
    assert_eq!(ids(&during.tasks), vec![later[1], later[2]]);
    assert_eq!(
        during.next_due,
        Some(until),
        "the claim loop wakes when the hold ends"
    );
    let held = store.task_hold(vec![later[0]]).await.unwrap();
    assert_eq!(
        waiting_on(&held[0], T0 + 20),
        Some(WaitingOn::Held {
            group: "api".into(),
            until
        })
    );
    assert!(claim(&store, "n1", 10, until - 1).await.is_empty());
    let after = claim(&store, "n1", 10, until).await;
    assert_eq!(
        ids(&after),
        vec![api[0], later[0]],
        "both at the hold's end"
    );
    let again = after.iter().find(|t| t.id == api[0]).unwrap();
    assert_eq!(again.attempt, 2, "the execution log numbers each run");
    complete(&store, &after, Outcome::Succeeded, until + 10).await;
    let info = store.task_get(api[0]).await.unwrap();
    assert_eq!((info.state, info.attempts), (TaskState::Succeeded, 2));
    let outcomes: Vec<Outcome> = store
        .attempt_list(AttemptFilter {
            task: Some(api[0]),
            ..Default::default()
        })
        .await
        .unwrap()
        .iter()
        .map(|(_, a)| a.outcome)
        .collect();
    assert_eq!(outcomes, vec![Outcome::Deferred, Outcome::Succeeded]);
}

pub async fn a_task_without_a_group_is_only_delayed_and_deferrals_are_bounded(
    store: Arc<dyn Store>,
) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let id = store
        .task_submit(b, admitted(vec![task(m, 0, None), task(m, 0, None)]), T0)
        .await
        .unwrap();
    let mut now = T0;
    let mut running = claim(&store, "n1", 1, now).await;
    assert_eq!(ids(&running), vec![id[0]]);
    // Deferred twice, the most allowed here, the task is never charged an attempt.
    for _ in 0..2 {
        let until = now + SECOND;
        store
            .task_complete(vec![deferred(&running[0], now + 1, until, 2)], now + 1)
            .await
            .unwrap();
        // Nothing else is held: the other ungrouped task runs at once.
        if now == T0 {
            let other = claim(&store, "n1", 1, now + 2).await;
            assert_eq!(ids(&other), vec![id[1]]);
        }
        assert!(claim(&store, "n1", 1, until - 1).await.is_empty());
        now = until;
        running = claim(&store, "n1", 1, now).await;
        assert_eq!(ids(&running), vec![id[0]]);
    }
    // The third asks once more than allowed: it counts as a failure, and with its one
    // attempt spent the task fails.
    store
        .task_complete(
            vec![deferred(&running[0], now + 1, now + SECOND, 2)],
            now + 1,
        )
        .await
        .unwrap();
    let info = store.task_get(id[0]).await.unwrap();
    assert_eq!(info.state, TaskState::Failed);
    assert_eq!(info.outcome, Some(Outcome::Deferred));
    assert!(
        info.error
            .as_deref()
            .unwrap_or("")
            .contains("`max_deferrals`"),
        "{:?}",
        info.error
    );
    assert_eq!((info.attempts, info.max_attempts), (3, 3));
}
