//! Quotas on what one batch stores: submissions past one are refused whole, naming it;
//! outputs and captured text past one are not kept; pruning gives the room back. A
//! tenant's open limit holds across its batches, under concurrent submissions too.

use qhost::runtime::{LogLevel, LogLine};

use super::*;

fn sized(module: Digest, input: &[u8]) -> TaskSpec {
    TaskSpec {
        max_attempts: 1,
        ..TaskSpec::new(module, input)
    }
}

fn quota_error(err: StoreError) -> String {
    match err {
        StoreError::Quota(message) => message,
        other => panic!("expected a quota refusal, got {other:?}"),
    }
}

/// Twenty submissions of one task at once, into four batches of a tenant whose open
/// limit is 10: exactly ten are taken, the others refused naming the limit, and the
/// tenant counts ten open. The limit lifted, they are taken again.
pub async fn a_tenants_open_limit_holds_under_concurrent_submissions(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let tenant = store.tenant_add("a".into(), T0).await.unwrap();
    let limit = |max_open| TenantChange {
        max_open: Some(max_open),
        ..TenantChange::default()
    };
    store
        .tenant_set("a".into(), limit(Some(10)), now_micros())
        .await
        .unwrap();
    let mut batches = Vec::new();
    for _ in 0..4 {
        let spec = BatchSpec {
            tenant: Some(tenant.id),
            ..BatchSpec::default()
        };
        batches.push(batch(&store, spec).await);
    }
    let submissions: Vec<_> = (0..20)
        .map(|i| {
            let (store, b) = (store.clone(), batches[i % 4]);
            tokio::spawn(async move {
                store
                    .task_submit(b, admitted(vec![task(m, 0, None)]), T0)
                    .await
            })
        })
        .collect();
    let (mut taken, mut refused) = (0, Vec::new());
    for submission in submissions {
        match submission.await.unwrap() {
            Ok(_) => taken += 1,
            Err(err) => refused.push(quota_error(err)),
        }
    }
    assert_eq!((taken, refused.len()), (10, 10), "{refused:?}");
    assert!(
        refused[0].contains("`max_open` limit of 10"),
        "{}",
        refused[0]
    );
    let a = store.tenant_get(tenant.id).await.unwrap();
    assert_eq!((a.open, a.max_open), (10, Some(10)));
    let mut stored = 0;
    for &b in &batches {
        stored += store.batch_get(b).await.unwrap().progress.ready;
    }
    assert_eq!(stored, 10, "what was refused stored nothing");

    store
        .tenant_set("a".into(), limit(None), now_micros())
        .await
        .unwrap();
    store
        .task_submit(batches[0], admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap();
    assert_eq!(store.tenant_get(tenant.id).await.unwrap().open, 11);
}

pub async fn a_submission_past_a_quota_is_refused_whole(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let quotas = Quotas {
        tasks: Some(3),
        input_bytes: Some(10),
        ..Quotas::default()
    };
    let b = batch(
        &store,
        BatchSpec {
            quotas,
            ..BatchSpec::default()
        },
    )
    .await;
    let four = || sized(m, b"four");
    store
        .task_submit(b, admitted(vec![four(), four()]), T0)
        .await
        .unwrap();
    // Two more tasks would make four, past the quota of three: neither is stored.
    let err = quota_error(
        store
            .task_submit(b, admitted(vec![sized(m, b""), sized(m, b"")]), T0)
            .await
            .unwrap_err(),
    );
    assert!(
        err.contains("`tasks` quota") && err.contains("of 3"),
        "{err}"
    );
    // Eight bytes of input stored, three more would pass ten.
    let err = quota_error(
        store
            .task_submit(b, admitted(vec![sized(m, b"abc")]), T0)
            .await
            .unwrap_err(),
    );
    assert!(err.contains("`input_bytes` quota"), "{err}");
    let info = store.batch_get(b).await.unwrap();
    assert_eq!(
        info.progress.total(),
        2,
        "a refused submission stores nothing"
    );
    assert_eq!(
        info.usage,
        Usage {
            tasks: 2,
            input_bytes: 8,
            ..Usage::default()
        }
    );
    // Exactly up to the quota fits.
    store
        .task_submit(b, admitted(vec![sized(m, b"ab")]), T0)
        .await
        .unwrap();
    // Raised, it takes more; the other quotas stay as they were.
    let raised = store
        .batch_set_quotas(
            b,
            QuotaChange {
                tasks: Some(Some(5)),
                input_bytes: Some(None),
                ..QuotaChange::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        raised.quotas,
        Quotas {
            tasks: Some(5),
            ..Quotas::default()
        }
    );
    store
        .task_submit(b, admitted(vec![four(), four()]), T0)
        .await
        .unwrap();
    let info = store.batch_get(b).await.unwrap();
    assert_eq!((info.progress.total(), info.usage.tasks), (5, 5));
    assert_eq!(info.usage.input_bytes, 18);
}

pub async fn output_and_text_past_a_quota_are_not_kept(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let quotas = Quotas {
        output_bytes: Some(10),
        text_bytes: Some(8),
        ..Quotas::default()
    };
    let b = batch(
        &store,
        BatchSpec {
            quotas,
            ..BatchSpec::default()
        },
    )
    .await;
    let ids = store
        .task_submit(b, admitted(vec![sized(m, b""), sized(m, b"")]), T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 2, T0).await;
    let ended = |task: &ClaimedTask| Completion {
        output: Some(b"sixsix".to_vec()),
        stdout: b"hello".to_vec(),
        ..completion(task, Outcome::Succeeded, T0 + 1)
    };
    // Each in its own completion: the first fits whole.
    let first = claimed.iter().find(|t| t.id == ids[0]).unwrap();
    let second = claimed.iter().find(|t| t.id == ids[1]).unwrap();
    store
        .task_complete(vec![ended(first)], T0 + 1)
        .await
        .unwrap();
    let info = store.task_get(ids[0]).await.unwrap();
    assert_eq!(
        (info.state, info.output_size),
        (TaskState::Succeeded, Some(6))
    );
    // The second's output would pass ten bytes: the attempt ends output-too-large, its
    // output is not kept, and its stdout is cut to what text room is left.
    store
        .task_complete(vec![ended(second)], T0 + 2)
        .await
        .unwrap();
    let info = store.task_get(ids[1]).await.unwrap();
    assert_eq!(info.state, TaskState::Failed);
    assert_eq!(info.outcome, Some(Outcome::OutputTooLarge));
    let error = info.error.unwrap();
    assert!(error.contains("`output_bytes` quota"), "{error}");
    assert_eq!(store.task_output(ids[1]).await.unwrap(), None);
    let attempts = store
        .attempt_list(AttemptFilter {
            task: Some(ids[1]),
            ..AttemptFilter::default()
        })
        .await
        .unwrap();
    assert!(attempts[0].1.stdout.is_empty(), "no text room left");
    let usage = store.batch_get(b).await.unwrap().usage;
    assert_eq!(usage.output_bytes, 6);
    // The error is kept whole, past the text quota: it says why.
    assert_eq!(usage.text_bytes, 5 + error.len() as u64);
}

pub async fn pruning_and_stale_ends_give_usage_back(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(b, admitted(vec![sized(m, b"in"), sized(m, b"put")]), T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 2, T0).await;
    let mut ends: Vec<Completion> = claimed
        .iter()
        .map(|t| Completion {
            stderr: b"err".to_vec(),
            logs: vec![LogLine {
                at_micros: 1,
                level: LogLevel::Info,
                message: "four".into(),
            }],
            ..completion(t, Outcome::Succeeded, T0 + SECOND)
        })
        .collect();
    // One of them stale: its lease is not the one it reports.
    ends[1].lease_token += 1;
    store.task_complete(ends, T0 + SECOND).await.unwrap();
    let usage = store.batch_get(b).await.unwrap().usage;
    assert_eq!(
        usage,
        Usage {
            tasks: 2,
            input_bytes: 5,
            output_bytes: 4,
            text_bytes: 7,
        },
        "the stale end charged nothing"
    );
    // Pruning the ended task takes out what it stored; the other is still claimed.
    assert_eq!(store.prune(T0 + 2 * SECOND, 10).await.unwrap(), 1);
    let usage = store.batch_get(b).await.unwrap().usage;
    let left = claimed.iter().find(|t| t.id != claimed[0].id).unwrap();
    let left_input = store.task_get(left.id).await.unwrap().input_size;
    assert_eq!(
        usage,
        Usage {
            tasks: 1,
            input_bytes: left_input,
            ..Usage::default()
        }
    );
}

pub async fn a_repeated_error_is_kept_once_and_read_whole(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let spec = TaskSpec {
        max_attempts: 4,
        backoff: Duration::from_millis(1),
        ..TaskSpec::new(m, "")
    };
    let id = store
        .task_submit(b, admitted(vec![spec]), T0)
        .await
        .unwrap()[0];
    let same = "x".repeat(1000);
    let errors = [same.as_str(), same.as_str(), same.as_str(), "another"];
    for (n, error) in errors.iter().enumerate() {
        let now = T0 + (n as i64 + 1) * 60 * SECOND;
        let claimed = claim(&store, "n1", 1, now).await;
        assert_eq!(ids(&claimed), [id], "attempt {}", n + 1);
        let end = Completion {
            error: Some(error.to_string()),
            ..completion(&claimed[0], Outcome::GuestError, now)
        };
        store.task_complete(vec![end], now).await.unwrap();
    }
    let attempts = store
        .attempt_list(AttemptFilter {
            task: Some(id),
            ..AttemptFilter::default()
        })
        .await
        .unwrap();
    let read: Vec<Option<&str>> = attempts.iter().map(|(_, a)| a.error.as_deref()).collect();
    assert_eq!(
        read,
        errors.map(Some),
        "every attempt reads its error whole"
    );
    let usage = store.batch_get(b).await.unwrap().usage;
    assert_eq!(
        usage.text_bytes,
        (same.len() + "another".len()) as u64,
        "the repeated error is stored, and counted, once"
    );
}
