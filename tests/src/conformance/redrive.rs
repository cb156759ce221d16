//! Failed and cancelled tasks run again (re-drive), and bulk actions on the tasks a
//! selection names: a re-driven task keeps its attempts and gets its whole budget again;
//! a lower order re-driven closes its batch's gate again for the tasks that have not
//! started; a batch that had ended opens again; cancel and priority reach what they
//! select and say how many they changed.

use super::*;

async fn state(store: &Arc<dyn Store>, task: TaskId) -> TaskState {
    store.task_get(task).await.unwrap().state
}

fn failing(module: Digest, order: i64, attempts: u32) -> TaskSpec {
    TaskSpec {
        max_attempts: attempts,
        backoff: Duration::ZERO,
        ..task(module, order, None)
    }
}

pub async fn failed_tasks_run_again_with_fresh_attempts(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(b, admitted(vec![failing(m, 0, 2)]), T0)
        .await
        .unwrap()[0];
    for n in 1..=2 {
        let claimed = claim(&store, "n1", 1, T0 + n * SECOND).await;
        complete(&store, &claimed, Outcome::Trap, T0 + n * SECOND + 1).await;
    }
    let info = store.task_get(t).await.unwrap();
    assert_eq!(
        (info.state, info.attempts, info.max_attempts),
        (TaskState::Failed, 2, 2)
    );

    assert_eq!(store.task_retry(TaskSelect::task(t)).await.unwrap(), 1);
    let info = store.task_get(t).await.unwrap();
    assert_eq!(
        (info.state, info.attempts, info.max_attempts, info.ended_at),
        (TaskState::Ready, 2, 4, None),
        "its attempts stay, its budget starts again"
    );
    assert_eq!(
        info.outcome,
        Some(Outcome::Trap),
        "the last attempt's outcome until the next ends"
    );
    let again = claim(&store, "n1", 1, T0 + 10 * SECOND).await;
    assert_eq!(again[0].attempt, 3, "attempt numbers go on growing");
    let result = complete(&store, &again, Outcome::Trap, T0 + 11 * SECOND).await;
    assert_eq!(
        result.retried, 1,
        "one more attempt of the new budget is left"
    );
    let last = claim(&store, "n1", 1, T0 + 12 * SECOND).await;
    assert_eq!(last[0].attempt, 4);
    complete(&store, &last, Outcome::Trap, T0 + 13 * SECOND).await;
    assert_eq!(state(&store, t).await, TaskState::Failed);
    let log = store
        .attempt_list(AttemptFilter {
            task: Some(t),
            ..Default::default()
        })
        .await
        .unwrap();
    let numbers: Vec<u32> = log.iter().map(|(_, a)| a.attempt).collect();
    assert_eq!(numbers, [1, 2, 3, 4], "the log keeps every attempt");

    // Only ended tasks that did not succeed run again.
    let ok = store
        .task_submit(b, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap()[0];
    assert_eq!(store.task_retry(TaskSelect::task(ok)).await.unwrap(), 0);
    let claimed = claim(&store, "n1", 1, T0 + 14 * SECOND).await;
    complete(&store, &claimed, Outcome::Succeeded, T0 + 15 * SECOND).await;
    assert_eq!(store.task_retry(TaskSelect::task(ok)).await.unwrap(), 0);
    assert_eq!(state(&store, ok).await, TaskState::Succeeded);
}

/// A lower order re-driven closes the gate again for the tasks above it that have not
/// started: ready ones wait, a reserved one handed back waits, and so does one whose
/// attempt failed meanwhile and that will run again; a running one runs on.
pub async fn a_retried_lower_order_closes_the_gate_again(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(
            b,
            admitted(vec![
                failing(m, 0, 1),
                task(m, 1, None),
                task(m, 1, None),
                failing(m, 1, 2),
                task(m, 1, None),
            ]),
            T0,
        )
        .await
        .unwrap();
    let low = claim(&store, "n1", 1, T0).await;
    complete(&store, &low, Outcome::GuestError, T0 + 1).await;
    let high = claim(&store, "n1", 3, T0 + 2).await;
    assert_eq!(ids(&high), [t[1], t[2], t[3]]);
    start(&store, &high[..1], T0 + 3).await;
    start(&store, &high[2..], T0 + 3).await;

    assert_eq!(store.task_retry(TaskSelect::task(t[0])).await.unwrap(), 1);
    assert_eq!(state(&store, t[0]).await, TaskState::Ready);
    assert_eq!(state(&store, t[1]).await, TaskState::Running);
    assert_eq!(state(&store, t[4]).await, TaskState::Waiting);
    store
        .task_hand_back(vec![(t[2], high[1].lease_token)], T0 + 4)
        .await
        .unwrap();
    assert_eq!(
        state(&store, t[2]).await,
        TaskState::Waiting,
        "handed back behind the gate"
    );
    let failed = complete(&store, &high[2..], Outcome::Trap, T0 + 4).await;
    assert_eq!(failed.retried, 1);
    assert_eq!(
        state(&store, t[3]).await,
        TaskState::Waiting,
        "to run again behind the gate"
    );
    assert!(
        store
            .task_submit(b, admitted(vec![task(m, 0, None)]), T0 + 5)
            .await
            .is_err(),
        "order 1 has started: order 0 takes no new task"
    );
    let again = claim(&store, "n1", 5, T0 + 6).await;
    assert_eq!(ids(&again), [t[0]], "only the reopened order");
    complete(&store, &again, Outcome::Succeeded, T0 + 7).await;
    assert_eq!(
        ids(&claim(&store, "n1", 5, T0 + 8).await),
        [t[2], t[3], t[4]],
        "its end opens the gate again"
    );
}

/// A batch re-drive names outcomes: by default (as the scheduler asks) the failed tasks;
/// `cancelled` reaches cancelled ones. A batch that had ended opens again, sealed or not.
pub async fn a_retry_reopens_an_ended_batch(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(
            b,
            admitted(vec![failing(m, 0, 1), failing(m, 0, 1), task(m, 1, None)]),
            T0,
        )
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 2, T0).await;
    complete(&store, &claimed[..1], Outcome::GuestError, T0 + 1).await;
    store.lease_rescue(Some("n1".into()), T0 + 2).await.unwrap();
    store.task_cancel(t[2], T0 + 3).await.unwrap();
    store.batch_seal(b).await.unwrap();
    assert_eq!(store.batch_open_count(b).await.unwrap(), 0);
    assert_eq!(
        store.task_get(t[1]).await.unwrap().outcome,
        Some(Outcome::Lost)
    );

    let lost_only = TaskSelect {
        outcomes: vec![Outcome::Lost],
        ..TaskSelect::batch(b)
    };
    assert_eq!(store.task_retry(lost_only).await.unwrap(), 1);
    assert_eq!(state(&store, t[1]).await, TaskState::Ready);
    assert_eq!(state(&store, t[0]).await, TaskState::Failed);
    assert_eq!(
        store.batch_open_count(b).await.unwrap(),
        1,
        "the batch is open again"
    );
    assert!(
        matches!(store.batch_release(b).await, Err(StoreError::Conflict(_))),
        "an open batch is not released"
    );
    let cancelled = TaskSelect {
        outcomes: vec![Outcome::Cancelled],
        ..TaskSelect::batch(b)
    };
    assert_eq!(store.task_retry(cancelled).await.unwrap(), 1);
    assert_eq!(state(&store, t[2]).await, TaskState::Waiting);
    // Everything that did not succeed, store-wide.
    assert_eq!(store.task_retry(TaskSelect::default()).await.unwrap(), 1);
    assert_eq!(store.batch_open_count(b).await.unwrap(), 3);
    let info = store.batch_get(b).await.unwrap();
    assert!(
        info.sealed,
        "a re-drive adds no task: the batch stays sealed"
    );
}

pub async fn a_retry_refuses_a_task_whose_module_is_gone(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(b, admitted(vec![failing(m, 0, 1)]), T0)
        .await
        .unwrap()[0];
    let claimed = claim(&store, "n1", 1, T0).await;
    complete(&store, &claimed, Outcome::Trap, T0 + 1).await;
    store.module_delete(m).await.unwrap();
    let refused = store.task_retry(TaskSelect::task(t)).await.unwrap_err();
    assert!(
        matches!(&refused, StoreError::Invalid(e) if e.contains("no longer exists")),
        "{refused}"
    );
    assert_eq!(state(&store, t).await, TaskState::Failed);
}

/// Bulk cancel and priority reach the tasks selected, and say how many they changed: a
/// cancel ends the pending ones and asks claimed ones to stop; a priority skips started
/// ones.
pub async fn bulk_cancel_and_priority_reach_what_they_select(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let other = batch(&store, BatchSpec::default()).await;
    store.group_set_limit("g".into(), 3).await.unwrap();
    let t = store
        .task_submit(
            b,
            admitted(vec![
                task(m, 0, Some("g")),
                task(m, 0, Some("g")),
                task(m, 0, Some("g")),
                task(m, 1, Some("g")),
                task(m, 0, None),
            ]),
            T0,
        )
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 2, T0).await;
    assert_eq!(ids(&claimed), [t[0], t[1]]);
    start(&store, &claimed[..1], T0 + 1).await;
    let o = store
        .task_submit(other, admitted(vec![task(m, 0, Some("g"))]), T0 + 1)
        .await
        .unwrap();

    let in_b = TaskSelect {
        group: Some("g".into()),
        ..TaskSelect::batch(b)
    };
    assert_eq!(
        store
            .task_set_priority_where(in_b.clone(), 5)
            .await
            .unwrap(),
        3,
        "the reserved and pending ones of the group in the batch, not the running one"
    );
    assert_eq!(store.task_get(t[0]).await.unwrap().priority, 0);
    assert_eq!(store.task_get(t[1]).await.unwrap().priority, 5);
    assert_eq!(store.task_get(o[0]).await.unwrap().priority, 0);

    let result = store.task_cancel_where(in_b, T0 + 2).await.unwrap();
    assert_eq!(
        result,
        BulkCancel {
            cancelled: 2,
            stopping: 2
        }
    );
    assert_eq!(state(&store, t[2]).await, TaskState::Cancelled);
    assert_eq!(state(&store, t[3]).await, TaskState::Cancelled);
    assert_eq!(state(&store, t[4]).await, TaskState::Ready);
    assert_eq!(state(&store, o[0]).await, TaskState::Ready);
    let mut asked = store
        .lease_renew("n1".into(), T0 + 30 * SECOND)
        .await
        .unwrap();
    asked.sort_unstable();
    assert_eq!(asked, [t[0], t[1]]);
    complete(&store, &claimed, Outcome::Cancelled, T0 + 3).await;
    let rest = claim(&store, "n1", 5, T0 + 4).await;
    assert_eq!(ids(&rest), [t[4], o[0]]);
}
