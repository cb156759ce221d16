//! Rates on groups: how many of a group's tasks are claimed per period. A group out of
//! tokens is passed over in the claim, as a full one is, and the claim says when its next
//! token comes.

use qhost::scheduler::rules::{WaitingOn, waiting_on};

use super::*;

fn rate(limit: u32, period: Duration, burst: u32) -> GroupRate {
    GroupRate {
        limit,
        period,
        burst,
    }
}

pub async fn a_rate_spaces_a_groups_claims_and_holds_back_nothing_else(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store.group_set_limit("api".into(), 100).await.unwrap();
    // Two a second, two at once.
    let two_per_second = rate(2, Duration::from_secs(1), 2);
    store
        .group_set_rate("api".into(), Some(two_per_second))
        .await
        .unwrap();
    let api = store
        .task_submit(
            b,
            admitted((0..6).map(|_| task(m, 0, Some("api"))).collect()),
            T0,
        )
        .await
        .unwrap();
    let free = store
        .task_submit(b, admitted(vec![task(m, 0, None), task(m, 0, None)]), T0)
        .await
        .unwrap();
    let first = claim_all(&store, "n1", 10, T0).await;
    assert_eq!(
        ids(&first.tasks),
        vec![api[0], api[1], free[0], free[1]],
        "the burst of the group, and everything else"
    );
    let half = SECOND / 2;
    assert_eq!(
        first.next_due,
        Some(T0 + half),
        "the claim loop wakes when the next token comes"
    );
    let info = store.group_get("api".into()).await.unwrap();
    assert_eq!(info.rate, Some(two_per_second));
    assert_eq!((info.running, info.pending), (2, 4));
    // No token before its time, one at it, and the task waits on the rate meanwhile.
    let waiting = store.task_hold(vec![api[2]]).await.unwrap();
    assert_eq!(
        waiting_on(&waiting[0], T0 + half - 1),
        Some(WaitingOn::Rate {
            group: "api".into(),
            until: T0 + half
        })
    );
    assert!(claim(&store, "n1", 10, T0 + half - 1).await.is_empty());
    assert_eq!(ids(&claim(&store, "n1", 10, T0 + half).await), vec![api[2]]);
    // After a quiet spell, the burst and no more.
    assert_eq!(
        ids(&claim(&store, "n1", 10, T0 + 10 * SECOND).await),
        vec![api[3], api[4]]
    );
    // A rate removed lets the rest through at once.
    store.group_set_rate("api".into(), None).await.unwrap();
    assert_eq!(store.group_get("api".into()).await.unwrap().rate, None);
    assert_eq!(
        ids(&claim(&store, "n1", 10, T0 + 10 * SECOND).await),
        vec![api[5]]
    );
}

pub async fn a_group_out_of_tokens_at_the_head_holds_up_nothing_behind_it(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store.group_set_limit("slow".into(), 1000).await.unwrap();
    store
        .group_set_rate("slow".into(), Some(rate(1, Duration::from_secs(3600), 1)))
        .await
        .unwrap();
    // More tasks of the rated group than any claim reads in one go, then a few others.
    let slow = store
        .task_submit(
            b,
            admitted((0..3000).map(|_| task(m, 0, Some("slow"))).collect()),
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
                task(m, 0, Some("b")),
            ]),
            T0,
        )
        .await
        .unwrap();
    let first = claim(&store, "n1", 10, T0).await;
    assert_eq!(
        ids(&first),
        vec![slow[0], behind[0], behind[1], behind[2]],
        "one token of the rated group, and everything behind it"
    );
    complete(&store, &first, Outcome::Succeeded, T0 + 1).await;
    let behind_more = store
        .task_submit(b, admitted(vec![task(m, 0, Some("a"))]), T0 + 2)
        .await
        .unwrap();
    let second = claim_all(&store, "n1", 10, T0 + 2).await;
    assert_eq!(
        ids(&second.tasks),
        behind_more,
        "the group waits, others pass"
    );
    assert_eq!(second.next_due, Some(T0 + 3600 * SECOND));
}

pub async fn a_rate_set_after_the_fact_and_a_paused_group_keep_their_rules(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store.group_set_limit("g".into(), 10).await.unwrap();
    let tasks = store
        .task_submit(
            b,
            admitted((0..4).map(|_| task(m, 0, Some("g"))).collect()),
            T0,
        )
        .await
        .unwrap();
    // A rate set on a group whose tasks wait already.
    store
        .group_set_rate("g".into(), Some(rate(1, Duration::from_secs(1), 1)))
        .await
        .unwrap();
    assert_eq!(ids(&claim(&store, "n1", 10, T0).await), vec![tasks[0]]);
    // Paused, a group with a token gives none, and no wake-up is owed for its rate.
    store.group_set_paused("g".into(), true).await.unwrap();
    let paused = claim_all(&store, "n1", 10, T0 + 5 * SECOND).await;
    assert!(paused.tasks.is_empty());
    assert_eq!(paused.next_due, None);
    store.group_set_paused("g".into(), false).await.unwrap();
    let info = store.group_get("g".into()).await.unwrap();
    assert_eq!((info.limit, info.paused), (10, false));
    assert_eq!(info.rate, Some(rate(1, Duration::from_secs(1), 1)));
    assert_eq!(
        ids(&claim(&store, "n1", 10, T0 + 5 * SECOND).await),
        vec![tasks[1]]
    );
    // Set anew, a rate starts with its burst.
    store
        .group_set_rate("g".into(), Some(rate(1, Duration::from_secs(1), 2)))
        .await
        .unwrap();
    assert_eq!(
        ids(&claim(&store, "n1", 10, T0 + 5 * SECOND).await),
        vec![tasks[2], tasks[3]]
    );
    // The stats show the rate and the tokens it has left.
    let stats = store.queue_stats(T0 + 5 * SECOND).await.unwrap();
    let g = stats.groups.iter().find(|g| g.key == "g").unwrap();
    assert_eq!((g.rate.map(|r| r.burst), g.tokens), (Some(2), Some(0)));
    let later = store.queue_stats(T0 + 60 * SECOND).await.unwrap();
    let g = later.groups.iter().find(|g| g.key == "g").unwrap();
    assert_eq!(g.tokens, Some(2));
}

fn costing(m: Digest, group: &str, cost: u32) -> TaskSpec {
    TaskSpec {
        cost,
        ..task(m, 0, Some(group))
    }
}

pub async fn a_tasks_cost_spends_that_many_tokens_and_may_overdraw(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store.group_set_limit("api".into(), 100).await.unwrap();
    // Four a second (a token every 250 ms), four at once.
    store
        .group_set_rate("api".into(), Some(rate(4, Duration::from_secs(1), 4)))
        .await
        .unwrap();
    let quarter = SECOND / 4;
    let api = store
        .task_submit(
            b,
            admitted(vec![
                costing(m, "api", 3),
                costing(m, "api", 2),
                costing(m, "api", 1),
            ]),
            T0,
        )
        .await
        .unwrap();
    let free = store
        .task_submit(b, admitted(vec![task(m, 0, None)]), T0)
        .await
        .unwrap();
    assert_eq!(store.task_get(api[0]).await.unwrap().cost, 3);
    assert_eq!(store.task_get(free[0]).await.unwrap().cost, 1);
    // 3 of 4 tokens, then 2 with one left: the bucket owes one, and the third waits.
    let first = claim_all(&store, "n1", 10, T0).await;
    assert_eq!(ids(&first.tasks), vec![api[0], api[1], free[0]]);
    // Five tokens spent from four: the next comes two intervals on.
    assert_eq!(first.next_due, Some(T0 + 2 * quarter));
    assert!(
        claim(&store, "n1", 10, T0 + 2 * quarter - 1)
            .await
            .is_empty()
    );
    assert_eq!(
        ids(&claim(&store, "n1", 10, T0 + 2 * quarter).await),
        vec![api[2]]
    );

    // The same behind a queue longer than a claim reads at once: the look behind it
    // counts the costs too.
    store.group_set_limit("busy".into(), 1).await.unwrap();
    let busy = store
        .task_submit(
            b,
            admitted((0..3000).map(|_| task(m, 0, Some("busy"))).collect()),
            T0,
        )
        .await
        .unwrap();
    let later = T0 + 100 * SECOND;
    let api = store
        .task_submit(
            b,
            admitted(vec![
                costing(m, "api", 10),
                costing(m, "api", 1),
                costing(m, "api", 1),
            ]),
            later,
        )
        .await
        .unwrap();
    let behind = claim_all(&store, "n1", 10, later).await;
    assert_eq!(
        ids(&behind.tasks),
        vec![busy[0], api[0]],
        "a task dearer than the burst runs once the bucket is full, and the rest wait"
    );
    // Ten spent from four: six owed, and one more to have a token again.
    assert_eq!(behind.next_due, Some(later + 7 * quarter));
    assert_eq!(
        ids(&claim(&store, "n1", 10, later + 7 * quarter).await),
        vec![api[1]]
    );
}
