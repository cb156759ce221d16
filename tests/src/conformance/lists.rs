//! Lists of batches and tasks: newest first, every filter applied, pages that neither
//! repeat nor miss a row while rows are added, counts by state; and what holds a pending
//! task back, for each reason.

use qhost::scheduler::rules::{WaitingOn, waiting_on};

use super::*;

fn batches_filter(limit: usize) -> BatchFilter {
    BatchFilter {
        limit,
        ..BatchFilter::default()
    }
}

fn tasks_filter(limit: usize, now: Micros) -> TaskFilter {
    TaskFilter {
        limit,
        now,
        ..TaskFilter::default()
    }
}

async fn batch_ids(store: &Arc<dyn Store>, filter: BatchFilter) -> Vec<BatchId> {
    let list = store.batch_list(filter).await.unwrap();
    list.iter().map(|b| b.id).collect()
}

async fn task_ids(store: &Arc<dyn Store>, filter: TaskFilter) -> Vec<TaskId> {
    let page = store.task_list(filter).await.unwrap();
    page.tasks.iter().map(|t| t.id).collect()
}

async fn open_at(store: &Arc<dyn Store>, name: &str, at: Micros) -> BatchId {
    let spec = BatchSpec {
        name: Some(name.into()),
        ..BatchSpec::default()
    };
    store.batch_open(spec, rand_hash(), at).await.unwrap().id
}

pub async fn batches_list_newest_first_filtered_and_paged(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let open = open_at(&store, "nightly", T0).await;
    let sealed = open_at(&store, "nightly", T0 + SECOND).await;
    let ended = open_at(&store, "adhoc", T0 + 2 * SECOND).await;
    let empty = open_at(&store, "adhoc", T0 + 3 * SECOND).await;
    store
        .task_submit(sealed, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap();
    store.batch_seal(sealed).await.unwrap();
    store
        .task_submit(ended, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 10, T0 + 3 * SECOND).await;
    let ended_task = claimed.iter().filter(|t| t.batch == ended).cloned();
    complete(
        &store,
        &ended_task.collect::<Vec<_>>(),
        Outcome::Succeeded,
        T0 + 4 * SECOND,
    )
    .await;

    assert_eq!(
        batch_ids(&store, batches_filter(10)).await,
        [empty, ended, sealed, open],
        "newest first"
    );
    let page = store.batch_list(batches_filter(10)).await.unwrap();
    let states: Vec<BatchState> = page.iter().map(BatchState::of).collect();
    assert_eq!(
        states,
        [
            BatchState::Open,
            BatchState::Ended,
            BatchState::Sealed,
            BatchState::Open
        ]
    );
    assert_eq!(page[1].progress.succeeded, 1, "each row has its progress");
    for (states, expected) in [
        (vec![BatchState::Open], vec![empty, open]),
        (vec![BatchState::Sealed], vec![sealed]),
        (vec![BatchState::Ended], vec![ended]),
        (
            vec![BatchState::Sealed, BatchState::Ended],
            vec![ended, sealed],
        ),
    ] {
        let filter = BatchFilter {
            states: states.clone(),
            ..batches_filter(10)
        };
        assert_eq!(batch_ids(&store, filter).await, expected, "{states:?}");
    }
    let named = BatchFilter {
        name: Some("nightly".into()),
        ..batches_filter(10)
    };
    assert_eq!(batch_ids(&store, named).await, [sealed, open]);
    let window = BatchFilter {
        created_after: Some(T0 + SECOND),
        created_before: Some(T0 + 3 * SECOND),
        ..batches_filter(10)
    };
    assert_eq!(batch_ids(&store, window).await, [ended, sealed]);
    let one = BatchFilter {
        batch: Some(sealed),
        ..batches_filter(10)
    };
    assert_eq!(batch_ids(&store, one).await, [sealed]);

    // Pages of 3 then the rest: one more row than the limit says that more follow.
    let first = batch_ids(&store, batches_filter(3)).await;
    assert_eq!(
        first,
        [empty, ended, sealed, open],
        "the limit and one more"
    );
    let after = store.batch_get(sealed).await.unwrap();
    let rest = BatchFilter {
        after: Some(Position {
            at: after.created_at,
            id: after.id,
        }),
        ..batches_filter(3)
    };
    assert_eq!(batch_ids(&store, rest).await, [open]);
}

pub async fn tasks_list_by_every_filter_with_counts(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let other = store
        .module_put(b"another module".to_vec(), Some("other".into()), None, T0)
        .await
        .unwrap()
        .digest;
    let b1 = batch(&store, BatchSpec::default()).await;
    let b2 = batch(&store, BatchSpec::default()).await;
    let a = store
        .task_submit(
            b1,
            admitted(vec![task(m, 0, Some("g")), task(m, 1, None)]),
            T0,
        )
        .await
        .unwrap();
    let b = store
        .task_submit(
            b2,
            admitted(vec![
                task(other, 0, None),
                task(m, 0, None),
                task(m, 0, None),
            ]),
            T0 + SECOND,
        )
        .await
        .unwrap();
    // b[0] succeeds, b[1] fails, b[2] is claimed (reserved), a[0] runs, a[1] waits.
    let now = T0 + 2 * SECOND;
    let claimed = claim(&store, "n1", 10, now).await;
    assert_eq!(ids(&claimed), [a[0], b[0], b[1], b[2]]);
    let by_id = |id: TaskId| claimed.iter().find(|t| t.id == id).unwrap().clone();
    start(&store, &[by_id(a[0]), by_id(b[0]), by_id(b[1])], now).await;
    complete(&store, &[by_id(b[0])], Outcome::Succeeded, now).await;
    complete(&store, &[by_id(b[1])], Outcome::Trap, now).await;

    let all = task_ids(&store, tasks_filter(10, now)).await;
    assert_eq!(all, [b[2], b[1], b[0], a[1], a[0]], "newest first");
    let check = |filter: TaskFilter, expected: Vec<TaskId>, what: &'static str| {
        let store = store.clone();
        async move {
            assert_eq!(task_ids(&store, filter).await, expected, "{what}");
        }
    };
    let base = tasks_filter(10, now);
    check(
        TaskFilter {
            batch: Some(b1),
            ..base.clone()
        },
        vec![a[1], a[0]],
        "batch",
    )
    .await;
    check(
        TaskFilter {
            group: Some("g".into()),
            ..base.clone()
        },
        vec![a[0]],
        "group",
    )
    .await;
    check(
        TaskFilter {
            modules: vec![other],
            ..base.clone()
        },
        vec![b[0]],
        "module",
    )
    .await;
    check(
        TaskFilter {
            outcomes: vec![Outcome::Trap],
            ..base.clone()
        },
        vec![b[1]],
        "outcome",
    )
    .await;
    check(
        TaskFilter {
            submitted_before: Some(T0 + SECOND),
            ..base.clone()
        },
        vec![a[1], a[0]],
        "submitted before",
    )
    .await;
    check(
        TaskFilter {
            submitted_after: Some(T0 + SECOND),
            batch: Some(b2),
            ..base.clone()
        },
        vec![b[2], b[1], b[0]],
        "submitted after, in a batch",
    )
    .await;
    for (state, expected) in [
        (TaskState::Waiting, vec![a[1]]),
        (TaskState::Ready, vec![]),
        (TaskState::Reserved, vec![b[2]]),
        (TaskState::Running, vec![a[0]]),
        (TaskState::Succeeded, vec![b[0]]),
        (TaskState::Failed, vec![b[1]]),
        (TaskState::Cancelled, vec![]),
    ] {
        let filter = TaskFilter {
            states: vec![state],
            ..base.clone()
        };
        assert_eq!(task_ids(&store, filter).await, expected, "{state:?}");
    }
    let two = TaskFilter {
        states: vec![TaskState::Running, TaskState::Failed],
        ..base.clone()
    };
    assert_eq!(task_ids(&store, two).await, [b[1], a[0]]);

    let page = store.task_list(base.clone()).await.unwrap();
    assert_eq!(
        page.counts,
        Progress {
            waiting: 1,
            reserved: 1,
            running: 1,
            succeeded: 1,
            failed: 1,
            ..Progress::default()
        }
    );
    assert!(!page.counts_capped);
    let in_b2 = TaskFilter {
        batch: Some(b2),
        states: vec![TaskState::Succeeded, TaskState::Failed],
        ..base
    };
    let counts = store.task_list(in_b2).await.unwrap().counts;
    assert_eq!(
        (counts.succeeded, counts.failed, counts.reserved),
        (1, 1, 0)
    );
}

pub async fn task_pages_neither_repeat_nor_miss_while_tasks_are_added(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let mut expected = Vec::new();
    for i in 0..4 {
        // Several tasks share a submission time: the id breaks the tie.
        let ids = store
            .task_submit(
                b,
                admitted((0..3).map(|_| task(m, 0, None)).collect()),
                T0 + i,
            )
            .await
            .unwrap();
        expected.extend(ids);
    }
    let mut seen = Vec::new();
    let mut after = None;
    let mut added = 0;
    loop {
        let filter = TaskFilter {
            batch: Some(b),
            after,
            ..tasks_filter(5, T0 + 10)
        };
        let mut page = store.task_list(filter).await.unwrap().tasks;
        let more = page.len() > 5;
        page.truncate(5);
        seen.extend(page.iter().map(|t| t.id));
        // Newer tasks come in between pages: they belong before the first page.
        store
            .task_submit(b, admitted(vec![task(m, 0, None)]), T0 + 100 + added)
            .await
            .unwrap();
        added += 1;
        if !more {
            break;
        }
        let last = page.last().unwrap();
        after = Some(Position {
            at: last.submitted_at,
            id: last.id,
        });
    }
    expected.reverse();
    assert_eq!(seen, expected, "every task once, newest first");
}

pub async fn waiting_on_names_each_reason(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let why = |task: TaskId, now: Micros| {
        let store = store.clone();
        async move {
            let facts = store.task_hold(vec![task]).await.unwrap();
            let on = waiting_on(&facts[0], now);
            // The list shows a pending task in the state the one rule names, and only in
            // that one.
            let shown = facts[0].shown(now);
            for state in TaskState::ALL.into_iter().filter(|_| shown.is_some()) {
                let filter = TaskFilter {
                    states: vec![state],
                    ..tasks_filter(100, now)
                };
                let listed = task_ids(&store, filter).await.contains(&task);
                assert_eq!(
                    listed,
                    shown == Some(state),
                    "task {task} listed as {state:?}: shown {shown:?} ({on:?})"
                );
            }
            on
        }
    };

    // The gate: order 1 waits on order 0's two open tasks.
    let b = batch(&store, BatchSpec::default()).await;
    let t = store
        .task_submit(
            b,
            admitted(vec![task(m, 0, None), task(m, 0, None), task(m, 1, None)]),
            T0,
        )
        .await
        .unwrap();
    assert_eq!(
        why(t[2], T0).await,
        Some(WaitingOn::Gate { order: 0, open: 2 })
    );
    assert_eq!(why(t[0], T0).await, None, "ready: claimable now");
    assert!(store.task_hold(vec![i64::MAX]).await.unwrap().is_empty());

    // A delay, then a retry's backoff.
    let delayed = TaskSpec {
        not_before: Some(T0 + 50 * SECOND),
        ..task(m, 0, None)
    };
    let retried = TaskSpec {
        max_attempts: 2,
        backoff: Duration::from_secs(10),
        ..task(m, 0, Some("solo"))
    };
    let d = batch(&store, BatchSpec::default()).await;
    let dt = store
        .task_submit(d, admitted(vec![delayed, retried]), T0)
        .await
        .unwrap();
    assert_eq!(
        why(dt[0], T0).await,
        Some(WaitingOn::Delay {
            until: T0 + 50 * SECOND
        })
    );
    assert_eq!(why(dt[0], T0 + 50 * SECOND).await, None, "due");
    // Claim everything claimable now (the delayed task is not).
    let claimed = claim(&store, "n1", 10, T0).await;
    let attempt = claimed.iter().find(|c| c.id == dt[1]).unwrap().clone();
    complete(&store, &[attempt], Outcome::Trap, T0 + SECOND).await;
    match why(dt[1], T0 + SECOND).await {
        Some(WaitingOn::Retry { until, attempts }) => {
            assert!(until > T0 + SECOND, "due after its backoff");
            assert_eq!(attempts, 1);
        }
        other => panic!("a retry in backoff: {other:?}"),
    }

    // A group at its limit, then paused.
    let g = batch(&store, BatchSpec::default()).await;
    let gt = store
        .task_submit(
            g,
            admitted(vec![task(m, 0, Some("g")), task(m, 0, Some("g"))]),
            T0,
        )
        .await
        .unwrap();
    let first = claim(&store, "n1", 1, T0).await;
    assert_eq!(ids(&first), [gt[0]]);
    assert_eq!(
        why(gt[1], T0).await,
        Some(WaitingOn::Group {
            group: "g".into(),
            limit: 1,
            running: 1
        })
    );
    store.group_set_paused("g".into(), true).await.unwrap();
    assert_eq!(
        why(gt[1], T0).await,
        Some(WaitingOn::GroupPaused { group: "g".into() })
    );
    store.group_set_paused("g".into(), false).await.unwrap();

    // A batch at its max_parallel, then paused.
    let spec = BatchSpec {
        max_parallel: Some(1),
        ..BatchSpec::default()
    };
    let p = batch(&store, spec).await;
    let pt = store
        .task_submit(p, admitted(vec![task(m, 0, None), task(m, 0, None)]), T0)
        .await
        .unwrap();
    let first = claim(&store, "n1", 1, T0).await;
    assert_eq!(ids(&first), [pt[0]]);
    assert_eq!(
        why(pt[1], T0).await,
        Some(WaitingOn::Batch {
            max_parallel: 1,
            running: 1
        })
    );
    store.batch_set_paused(p, true).await.unwrap();
    assert_eq!(why(pt[1], T0).await, Some(WaitingOn::BatchPaused));
    assert_eq!(why(pt[0], T0).await, None, "claimed: not pending");
}

/// How many tasks in each state a filter names, by listing each state (row by row).
async fn listed_counts(store: &Arc<dyn Store>, filter: &TaskFilter) -> Progress {
    let mut counts = Progress::default();
    for state in TaskState::ALL {
        if !filter.states.is_empty() && !filter.states.contains(&state) {
            continue;
        }
        let one = TaskFilter {
            states: vec![state],
            after: None,
            limit: 500,
            ..filter.clone()
        };
        counts.add(state, task_ids(store, one).await.len() as u64);
    }
    counts
}

/// The counts of a list match its rows, state by state, for each filter, on every page.
async fn assert_counts_match_rows(store: &Arc<dyn Store>, filters: &[(&str, TaskFilter)]) {
    for (what, filter) in filters {
        let page = store.task_list(filter.clone()).await.unwrap();
        assert!(!page.counts_capped, "{what}");
        assert_eq!(page.counts, listed_counts(store, filter).await, "{what}");
        // The counts are the filter's, whatever page is read.
        if let Some(first) = page.tasks.first() {
            let next = TaskFilter {
                after: Some(Position {
                    at: first.submitted_at,
                    id: first.id,
                }),
                ..filter.clone()
            };
            let second = store.task_list(next).await.unwrap();
            assert_eq!(second.counts, page.counts, "{what}: a later page");
        }
    }
}

/// Counts read from wherever a store keeps them (its ended totals, ready queue, leases,
/// gates) say exactly what the rows say, through waits at a gate, delays, limits, a
/// pause, claims, starts, ends, a retry and a release, a gate lowered and one closed
/// again, with and without filters.
pub async fn task_counts_match_the_rows_through_every_change(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let other = store
        .module_put(b"another module".to_vec(), Some("other".into()), None, T0)
        .await
        .unwrap()
        .digest;
    let delayed = TaskSpec {
        not_before: Some(T0 + 1000 * SECOND),
        ..task(m, 0, None)
    };
    let a = batch(&store, BatchSpec::default()).await;
    let at = store
        .task_submit(
            a,
            admitted(vec![
                task(m, 0, Some("g")),
                task(m, 0, Some("g")),
                task(m, 1, None),
                delayed,
            ]),
            T0,
        )
        .await
        .unwrap();
    let b = batch(&store, BatchSpec::default()).await;
    let bt = store
        .task_submit(
            b,
            admitted(vec![
                task(m, 0, None),
                task(m, 0, None),
                task(m, 0, None),
                task(other, 0, None),
            ]),
            T0 + SECOND,
        )
        .await
        .unwrap();
    let p = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(p, admitted(vec![task(m, 0, None)]), T0 + SECOND)
        .await
        .unwrap();
    let now = T0 + 2 * SECOND;
    let claimed = claim(&store, "n1", 10, now).await;
    assert_eq!(claimed.len(), 6, "one of group g, batch b, batch p");
    let of = |id: TaskId| claimed.iter().find(|c| c.id == id).unwrap().clone();
    let in_g = claimed
        .iter()
        .find(|c| at[..2].contains(&c.id))
        .unwrap()
        .clone();
    start(&store, &[in_g, of(bt[0]), of(bt[1]), of(bt[2])], now).await;
    complete(&store, &[of(bt[0])], Outcome::Succeeded, now).await;
    complete(&store, &[of(bt[1]), of(bt[2])], Outcome::Trap, now).await;
    // A task held by its paused batch, one ready, one cancelled.
    store.batch_set_paused(p, true).await.unwrap();
    store
        .task_submit(p, admitted(vec![task(m, 0, None)]), now)
        .await
        .unwrap();
    let c = batch(&store, BatchSpec::default()).await;
    let ct = store
        .task_submit(
            c,
            admitted(vec![task(m, 0, None), task(other, 0, None)]),
            now + 1,
        )
        .await
        .unwrap();
    store.task_cancel(ct[0], now).await.unwrap();

    let base = tasks_filter(2, now);
    let page = store.task_list(base.clone()).await.unwrap();
    assert_eq!(
        page.counts,
        Progress {
            waiting: 2,
            ready: 2,
            held: 1,
            reserved: 2,
            running: 1,
            succeeded: 1,
            failed: 2,
            cancelled: 1,
        },
        "waiting: a gate, a delay; ready: c's, and one at its group's limit; held: by a \
         pause; reserved: b's other module and p's first"
    );
    let filters = |now: Micros| {
        let base = tasks_filter(2, now);
        vec![
            ("no filter", base.clone()),
            (
                "a module",
                TaskFilter {
                    modules: vec![other],
                    ..base.clone()
                },
            ),
            (
                "a group",
                TaskFilter {
                    group: Some("g".into()),
                    ..base.clone()
                },
            ),
            (
                "a batch",
                TaskFilter {
                    batch: Some(a),
                    ..base.clone()
                },
            ),
            (
                "an outcome",
                TaskFilter {
                    outcomes: vec![Outcome::Trap],
                    ..base.clone()
                },
            ),
            (
                "success",
                TaskFilter {
                    outcomes: vec![Outcome::Succeeded],
                    ..base.clone()
                },
            ),
            (
                "an outcome or success",
                TaskFilter {
                    outcomes: vec![Outcome::Trap, Outcome::Succeeded],
                    ..base.clone()
                },
            ),
            (
                "submitted after",
                TaskFilter {
                    submitted_after: Some(T0 + SECOND),
                    ..base.clone()
                },
            ),
            (
                "two states",
                TaskFilter {
                    states: vec![TaskState::Waiting, TaskState::Failed],
                    ..base.clone()
                },
            ),
        ]
    };
    assert_counts_match_rows(&store, &filters(now)).await;

    // A failed task run again leaves the failed count; a released batch's cancelled task
    // leaves the cancelled count.
    assert_eq!(store.task_retry(TaskSelect::task(bt[1])).await.unwrap(), 1);
    store.task_cancel(ct[1], now).await.unwrap();
    store.batch_release(c).await.unwrap();
    let counts = store.task_list(base).await.unwrap().counts;
    assert_eq!(
        (counts.ready, counts.failed, counts.cancelled),
        (2, 1, 0),
        "after a retry (ready, beside the one at its group's limit), a cancel (of c's ready \
         task) and a release"
    );
    // The same through filters, which a store may count from elsewhere.
    for (what, filter) in [
        (
            "submitted after",
            TaskFilter {
                submitted_after: Some(T0),
                ..tasks_filter(2, now)
            },
        ),
        (
            "outcomes",
            TaskFilter {
                outcomes: vec![Outcome::Trap, Outcome::Cancelled],
                ..tasks_filter(2, now)
            },
        ),
    ] {
        let counts = store.task_list(filter).await.unwrap().counts;
        assert_eq!((counts.failed, counts.cancelled), (1, 0), "{what}");
    }
    assert_counts_match_rows(&store, &filters(now)).await;

    // A gate lowered by a submission, then one closed again by a re-drive: the tasks at
    // the old gate wait again, and so do those above the order run again.
    let first = |order| TaskSpec {
        priority: Some(10),
        ..task(m, order, None)
    };
    let d = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(d, admitted(vec![first(1), task(m, 2, None)]), now)
        .await
        .unwrap();
    let lower = store
        .task_submit(d, admitted(vec![first(0)]), now)
        .await
        .unwrap();
    let waiting = |counts: Progress| counts.waiting;
    let of_d = TaskFilter {
        batch: Some(d),
        ..tasks_filter(2, now)
    };
    assert_eq!(
        waiting(store.task_list(of_d.clone()).await.unwrap().counts),
        2
    );
    assert_counts_match_rows(&store, &filters(now)).await;
    let claimed = claim(&store, "n1", 1, now).await;
    assert_eq!(claimed[0].id, lower[0], "the first of the highest priority");
    start(&store, &claimed, now).await;
    complete(&store, &claimed, Outcome::Trap, now).await;
    assert_eq!(
        waiting(store.task_list(of_d.clone()).await.unwrap().counts),
        1
    );
    assert_eq!(
        store.task_retry(TaskSelect::task(lower[0])).await.unwrap(),
        1
    );
    assert_eq!(waiting(store.task_list(of_d).await.unwrap().counts), 2);
    assert_counts_match_rows(&store, &filters(now)).await;
}
