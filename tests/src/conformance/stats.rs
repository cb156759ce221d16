//! The queue at a glance: tasks per state from counters and small indexes, ended totals
//! that only go up, the oldest ready task, busy groups and deep batches; and the log read
//! newest first.

use super::*;

/// The counts as `task_counts` and `queue_stats` both report them.
async fn counts(store: &Arc<dyn Store>, now: Micros) -> Progress {
    let counts = store.task_counts().await.unwrap();
    assert_eq!(store.queue_stats(now).await.unwrap().counts, counts);
    counts
}

pub async fn counters_match_the_tasks_through_ends_retries_and_prunes(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(
            b,
            admitted(vec![
                task(m, 0, None),
                task(m, 0, None),
                task(m, 0, None),
                task(m, 0, None),
                task(m, 1, None),
            ]),
            T0,
        )
        .await
        .unwrap();
    let now = T0 + SECOND;
    assert_eq!(
        counts(&store, now).await,
        Progress {
            ready: 4,
            waiting: 1,
            ..Progress::default()
        }
    );
    let claimed = claim(&store, "n1", 3, now).await;
    start(&store, &claimed[..1], now).await;
    assert_eq!(
        counts(&store, now).await,
        Progress {
            ready: 1,
            waiting: 1,
            reserved: 2,
            running: 1,
            ..Progress::default()
        }
    );
    complete(&store, &claimed[..2], Outcome::Succeeded, now).await;
    complete(&store, &claimed[2..], Outcome::Trap, now).await;
    let pending = t[..4]
        .iter()
        .find(|&&id| claimed.iter().all(|c| c.id != id))
        .copied()
        .unwrap();
    store.task_cancel(pending, now).await.unwrap();
    // The gate of order 0 closed: the task of order 1 is ready.
    assert_eq!(
        counts(&store, now).await,
        Progress {
            ready: 1,
            succeeded: 2,
            failed: 1,
            cancelled: 1,
            ..Progress::default()
        }
    );
    let stats = store.queue_stats(now).await.unwrap();
    let ended = EndedTotals {
        succeeded: 2,
        failed: 1,
        cancelled: 1,
    };
    assert_eq!(stats.ended_total, ended);
    assert_eq!(
        store.batch_depths(20).await.unwrap(),
        vec![BatchDepth {
            batch: b,
            name: None,
            open: 1,
            paused: false,
        }]
    );

    // Run again, the failed task leaves the failed state; the total keeps its end.
    assert_eq!(
        store
            .task_retry(TaskSelect::task(claimed[2].id))
            .await
            .unwrap(),
        1
    );
    let now = now + SECOND;
    let counted = counts(&store, now).await;
    assert_eq!((counted.failed, counted.waiting + counted.ready), (0, 2));
    assert_eq!(store.queue_stats(now).await.unwrap().ended_total, ended);
    // It ends again, and the last task too: each end counts.
    let rest = claim(&store, "n1", 2, now).await;
    complete(&store, &rest, Outcome::Trap, now).await;
    let rest = claim(&store, "n1", 2, now).await;
    complete(&store, &rest, Outcome::Succeeded, now).await;
    assert_eq!(
        counts(&store, now).await,
        Progress {
            succeeded: 3,
            failed: 1,
            cancelled: 1,
            ..Progress::default()
        }
    );
    let ended = EndedTotals {
        succeeded: 3,
        failed: 2,
        cancelled: 1,
    };
    assert_eq!(store.queue_stats(now).await.unwrap().ended_total, ended);
    assert!(store.batch_depths(20).await.unwrap().is_empty());

    // Pruned, the tasks leave every state; the totals stay.
    assert_eq!(store.prune(now + SECOND, 100).await.unwrap(), 5);
    assert_eq!(counts(&store, now).await, Progress::default());
    assert_eq!(store.queue_stats(now).await.unwrap().ended_total, ended);
}

pub async fn the_oldest_ready_task_is_the_oldest_claimable(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let first = batch(&store, BatchSpec::default()).await;
    let second = batch(&store, BatchSpec::default()).await;
    let oldest = |now| {
        let store = store.clone();
        async move { store.queue_stats(now).await.unwrap().oldest_ready }
    };
    let now = T0 + 100 * SECOND;
    assert_eq!(oldest(now).await, None, "nothing submitted");
    store
        .task_submit(first, admitted(vec![task(m, 0, Some("g"))]), T0)
        .await
        .unwrap();
    store
        .task_submit(
            second,
            admitted(vec![
                task(m, 0, Some("g")),
                TaskSpec {
                    not_before: Some(T0 + 1000 * SECOND),
                    ..task(m, 0, None)
                },
            ]),
            T0 + 5 * SECOND,
        )
        .await
        .unwrap();
    assert_eq!(oldest(now).await, Some(T0));
    let groups = store.queue_stats(now).await.unwrap().groups;
    assert_eq!(
        groups,
        vec![GroupDepth {
            key: "g".into(),
            limit: 1,
            paused: false,
            running: 0,
            ready: 2,
            rate: None,
            tokens: None,
        }]
    );
    // Held by a pause, the first batch's task is not claimable.
    store.batch_set_paused(first, true).await.unwrap();
    assert_eq!(oldest(now).await, Some(T0 + 5 * SECOND));
    assert_eq!(store.task_counts().await.unwrap().held, 1);
    // Claimed, the second's grouped task leaves only the delayed one, not yet due.
    let claimed = claim(&store, "n1", 10, now).await;
    assert_eq!(claimed.len(), 1);
    assert_eq!(oldest(now).await, None);
    assert_eq!(
        oldest(T0 + 1000 * SECOND).await,
        Some(T0 + 5 * SECOND),
        "due"
    );
    let groups = store.queue_stats(now).await.unwrap().groups;
    assert_eq!((groups[0].running, groups[0].ready), (1, 1), "{groups:?}");
}

pub async fn the_log_reads_newest_first_in_pages_with_no_attempt_twice(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(b, admitted((0..7).map(|_| task(m, 0, None)).collect()), T0)
        .await
        .unwrap();
    // Seven attempts, one a second, each started 10 µs before it ended.
    for i in 0..7 {
        let now = T0 + (i + 1) * SECOND;
        let claimed = claim(&store, "n1", 1, now).await;
        complete(&store, &claimed, Outcome::Succeeded, now).await;
    }
    let read = |filter: AttemptFilter| {
        let store = store.clone();
        async move { store.attempt_list(filter).await.unwrap() }
    };
    let oldest_first: Vec<i64> = read(AttemptFilter::default())
        .await
        .iter()
        .map(|(p, _)| *p)
        .collect();
    assert_eq!(oldest_first.len(), 7);
    // Pages of three, newest first, each from the last one's position.
    let pages = |filter: AttemptFilter| async move {
        let mut seen = Vec::new();
        let mut before = None;
        loop {
            let page = read(AttemptFilter {
                before,
                newest_first: true,
                limit: Some(3),
                ..filter.clone()
            })
            .await;
            if page.is_empty() {
                break seen;
            }
            before = page.last().map(|(p, _)| *p);
            seen.extend(page.iter().map(|(p, a)| (*p, a.started_at)));
        }
    };
    let newest: Vec<i64> = pages(AttemptFilter::default())
        .await
        .iter()
        .map(|(p, _)| *p)
        .collect();
    let mut expected = oldest_first.clone();
    expected.reverse();
    assert_eq!(newest, expected, "every attempt once, newest first");
    // Until the fifth second: the first four attempts, newest first.
    let until = pages(AttemptFilter {
        until: Some(T0 + 5 * SECOND - 10),
        ..Default::default()
    })
    .await;
    assert_eq!(
        until.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
        expected[3..]
    );
    assert!(until.iter().all(|(_, at)| *at < T0 + 5 * SECOND - 10));
    // Since the third second and until the sixth: the third to the fifth.
    let between = pages(AttemptFilter {
        since: Some(T0 + 3 * SECOND - 10),
        until: Some(T0 + 6 * SECOND - 10),
        ..Default::default()
    })
    .await;
    assert_eq!(
        between.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
        expected[2..5]
    );
    // The last two, as a tail reads them.
    let tail = read(AttemptFilter {
        newest_first: true,
        limit: Some(2),
        ..Default::default()
    })
    .await;
    assert_eq!(
        tail.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
        expected[..2]
    );
}
