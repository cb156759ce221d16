//! How attempts end: stale completions, retries with backoff, rescued leases, and what
//! an attempt carries kept within bounds.

use qhost::runtime::{LogLevel, LogLine};

use super::*;

pub async fn stale_completions_change_nothing(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(b, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 1, T0).await;
    let mut wrong = completion(&claimed[0], Outcome::Succeeded, T0 + 1);
    wrong.lease_token += 1;
    let result = store.task_complete(vec![wrong], T0 + 1).await.unwrap();
    assert_eq!(result.stale, 1);
    assert_eq!(
        store.task_get(claimed[0].id).await.unwrap().state,
        TaskState::Reserved
    );
    complete(&store, &claimed, Outcome::Succeeded, T0 + 2).await;
    let twice = complete(&store, &claimed, Outcome::GuestError, T0 + 3).await;
    assert_eq!(twice.stale, 1, "a duplicate completion is ignored");
    let info = store.task_get(claimed[0].id).await.unwrap();
    assert_eq!(
        (info.state, info.outcome),
        (TaskState::Succeeded, Some(Outcome::Succeeded))
    );
    assert_eq!(
        store.task_output(claimed[0].id).await.unwrap().unwrap(),
        b"done"
    );
    let log = store
        .attempt_list(AttemptFilter {
            task: Some(claimed[0].id),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(log.len(), 1);
}

pub async fn failures_are_retried_with_backoff_then_fail(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let spec = TaskSpec {
        max_attempts: 2,
        backoff: Duration::from_secs(10),
        ..task(m, 0, None)
    };
    let id = store
        .task_submit(b, admitted(vec![spec]), T0)
        .await
        .unwrap()[0];
    let first = claim(&store, "n1", 1, T0).await;
    let result = complete(&store, &first, Outcome::Trap, T0 + 1).await;
    assert_eq!(result.retried, 1);
    let early = claim_all(&store, "n1", 1, T0 + 2).await;
    assert!(early.tasks.is_empty(), "retried before its backoff");
    let due = early
        .next_due
        .expect("the claim says when the retry is due");
    assert!(
        (T0 + 1 + 5 * SECOND..=T0 + 1 + 10 * SECOND).contains(&due),
        "backoff {}",
        due - T0
    );
    let second = claim(&store, "n1", 1, due).await;
    assert_eq!((second[0].id, second[0].attempt), (id, 2));
    complete(&store, &second, Outcome::Timeout, due + 1).await;
    let info = store.task_get(id).await.unwrap();
    assert_eq!(
        (info.state, info.outcome, info.attempts),
        (TaskState::Failed, Some(Outcome::Timeout), 2)
    );
    let log = store
        .attempt_list(AttemptFilter {
            task: Some(id),
            ..Default::default()
        })
        .await
        .unwrap();
    let outcomes: Vec<_> = log.iter().map(|(_, a)| (a.attempt, a.outcome)).collect();
    assert_eq!(outcomes, vec![(1, Outcome::Trap), (2, Outcome::Timeout)]);
}

/// A host error is not charged to the task: on its last attempt, the task runs again
/// after a backoff (of at least a second, whatever it asked), with one attempt more.
pub async fn a_host_error_gives_the_attempt_back(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let spec = TaskSpec {
        max_attempts: 1,
        backoff: Duration::ZERO,
        ..task(m, 0, None)
    };
    let id = store
        .task_submit(b, admitted(vec![spec]), T0)
        .await
        .unwrap()[0];
    let first = claim(&store, "n1", 1, T0).await;
    let result = complete(&store, &first, Outcome::HostError, T0 + 1).await;
    assert_eq!(result.retried, 1);
    let info = store.task_get(id).await.unwrap();
    assert_eq!(
        (info.outcome, info.attempts, info.max_attempts),
        (Some(Outcome::HostError), 1, 2)
    );
    let early = claim_all(&store, "n1", 1, T0 + 2).await;
    assert!(early.tasks.is_empty(), "retried at once");
    let due = early.next_due.expect("the retry is due later");
    assert!(due >= T0 + 1 + SECOND / 2, "backoff {}", due - T0);
    let second = claim(&store, "n1", 1, due).await;
    assert_eq!((second[0].id, second[0].attempt), (id, 2));
    complete(&store, &second, Outcome::Succeeded, due + 1).await;
    let info = store.task_get(id).await.unwrap();
    assert_eq!((info.state, info.attempts), (TaskState::Succeeded, 2));
}

pub async fn expired_leases_are_rescued(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    store.group_set_limit("g".into(), 1).await.unwrap();
    let b = batch(
        &store,
        BatchSpec {
            max_parallel: Some(1),
            ..BatchSpec::default()
        },
    )
    .await;
    let spec = TaskSpec {
        max_attempts: 2,
        backoff: Duration::ZERO,
        ..task(m, 0, Some("g"))
    };
    let id = store
        .task_submit(b, admitted(vec![spec.clone(), spec]), T0)
        .await
        .unwrap()[0];
    let first = claim(&store, "dead", 5, T0).await;
    assert_eq!(first.len(), 1);
    // Renewed leases are not rescued; expired ones are.
    let renewed = store
        .lease_renew("dead".into(), T0 + 60 * SECOND)
        .await
        .unwrap();
    assert!(renewed.is_empty());
    assert_eq!(
        store
            .lease_rescue(None, T0 + 40 * SECOND)
            .await
            .unwrap()
            .retried,
        0
    );
    let rescued = store.lease_rescue(None, T0 + 61 * SECOND).await.unwrap();
    assert_eq!(rescued.retried, 1);
    let log = store
        .attempt_list(AttemptFilter {
            task: Some(id),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(log[0].1.outcome, Outcome::Lost);
    assert_eq!(log[0].1.node, "dead");
    // The group and batch slots were freed with it.
    let again = claim(&store, "alive", 5, T0 + 62 * SECOND).await;
    assert_eq!(again.len(), 1);
    let late = complete(&store, &first, Outcome::Succeeded, T0 + 63 * SECOND).await;
    assert_eq!(late.stale, 1, "the dead node's late completion is refused");
    // A restarting node loses all its attempts at once.
    let result = store
        .lease_rescue(Some("alive".into()), T0 + 64 * SECOND)
        .await
        .unwrap();
    assert_eq!(result.ended.len() + result.retried, 1);
}

/// What an attempt carries is stored within the store's bounds, whatever it is: an error
/// message past its bound is cut and says so, and a NUL character (which PostgreSQL's text
/// refuses) does not keep the record from being written.
pub async fn completions_are_stored_within_bounds(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(b, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 1, T0).await;
    let mut end = completion(&claimed[0], Outcome::GuestError, T0 + 1);
    end.error = Some(format!("a\0b{}", "x".repeat(1_000_000)));
    end.logs = vec![LogLine {
        at_micros: 1,
        level: LogLevel::Info,
        message: "nul \0 in a log line".into(),
    }];
    store.task_complete(vec![end], T0 + 1).await.unwrap();

    let info = store.task_get(claimed[0].id).await.unwrap();
    let attempt = &store.attempt_list(AttemptFilter::default()).await.unwrap()[0].1;
    for error in [info.error.unwrap(), attempt.error.clone().unwrap()] {
        assert!(
            error.len() <= bounds::ERROR,
            "{} bytes of error",
            error.len()
        );
        assert!(error.starts_with("a\u{FFFD}bxxx"), "{}", &error[..10]);
        assert!(
            error.ends_with(" bytes more]"),
            "{}",
            &error[error.len() - 30..]
        );
    }
    assert_eq!(attempt.logs[0].message, "nul \0 in a log line");
}
