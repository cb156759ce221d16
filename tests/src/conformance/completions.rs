//! How attempts end: stale completions, retries with backoff, rescued leases, what an
//! attempt carries kept within bounds, and the slot time a tenant's attempts held.

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

/// A node's report: starts and ends written together, each as alone.
pub async fn a_report_marks_starts_and_ends_attempts_together(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    store
        .task_submit(b, admitted((0..4).map(|_| task(m, 0, None)).collect()), T0)
        .await
        .unwrap();
    let claimed = claim(&store, "n1", 4, T0).await;
    let start_of = |t: &ClaimedTask, at| Start {
        task: t.id,
        batch: t.batch,
        lease_token: t.lease_token,
        at,
    };
    let mut stale = start_of(&claimed[3], T0 + 5);
    stale.lease_token += 1;
    // Tasks 0 and 1 started and ended, task 2 started and runs on, task 3's start is stale.
    let starts = vec![
        start_of(&claimed[0], T0 + 5),
        start_of(&claimed[1], T0 + 5),
        start_of(&claimed[2], T0 + 6),
        stale,
    ];
    let ends = vec![
        completion(&claimed[0], Outcome::Succeeded, T0 + 7),
        completion(&claimed[1], Outcome::GuestError, T0 + 7),
    ];
    let result = store.task_report(starts, ends, T0 + 8).await.unwrap();
    let mut ended: Vec<TaskId> = result.ended.iter().map(|&(task, _)| task).collect();
    ended.sort_unstable();
    assert_eq!(ended, [claimed[0].id, claimed[1].id]);
    assert_eq!(result.stale, 0);
    assert_eq!(state_of(&store, claimed[0].id).await, TaskState::Succeeded);
    assert_eq!(state_of(&store, claimed[1].id).await, TaskState::Failed);
    assert_eq!(state_of(&store, claimed[2].id).await, TaskState::Running);
    assert_eq!(
        state_of(&store, claimed[3].id).await,
        TaskState::Reserved,
        "a start with a stale lease token changes nothing"
    );
    let running = store.running_list().await.unwrap();
    assert_eq!(
        running
            .iter()
            .map(|r| (r.task, r.since))
            .collect::<Vec<_>>(),
        [(claimed[2].id, T0 + 6)]
    );
    // Starts alone, and ends alone.
    let none = store
        .task_report(vec![start_of(&claimed[3], T0 + 9)], Vec::new(), T0 + 9)
        .await
        .unwrap();
    assert_eq!((none.stale, none.ended.len()), (0, 0));
    assert_eq!(state_of(&store, claimed[3].id).await, TaskState::Running);
    let ends = claimed[2..]
        .iter()
        .map(|t| completion(t, Outcome::Succeeded, T0 + 10))
        .collect();
    store.task_report(Vec::new(), ends, T0 + 10).await.unwrap();
    let counts = store.task_counts().await.unwrap();
    assert_eq!(
        (
            counts.running,
            counts.reserved,
            counts.succeeded,
            counts.failed
        ),
        (0, 0, 3, 1)
    );
}

/// A report that claims: the claim sees what the report's ends made claimable, claims at
/// the report's time, and takes no more than it asks for.
pub async fn a_report_claims_what_its_ends_made_ready(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let b = batch(&store, BatchSpec::default()).await;
    let ids = store
        .task_submit(
            b,
            admitted(vec![task(m, 0, None), task(m, 1, None), task(m, 1, None)]),
            T0,
        )
        .await
        .unwrap();
    let first = claim(&store, "n1", 3, T0).await;
    assert_eq!(first.len(), 1, "order 1 waits behind the gate");
    let params = |max, now| ClaimParams {
        node: "n1".into(),
        max,
        now,
        lease: Duration::from_secs(30),
    };
    let ends = vec![completion(&first[0], Outcome::Succeeded, T0 + 5)];
    let (report, claimed) = store
        .task_report_claim(Vec::new(), ends, params(1, T0 + 6))
        .await
        .unwrap();
    assert_eq!(report.ended, [(ids[0], b)]);
    assert_eq!(state_of(&store, ids[0]).await, TaskState::Succeeded);
    assert_eq!(
        claimed
            .tasks
            .iter()
            .map(|t| (t.id, t.claimed_at))
            .collect::<Vec<_>>(),
        [(ids[1], T0 + 6)],
        "the gate the report opened, one task as asked, at the report's time"
    );
    assert_eq!(state_of(&store, ids[1]).await, TaskState::Reserved);
    // A report of nothing claims what is left, and says nothing more is due.
    let (_, rest) = store
        .task_report_claim(Vec::new(), Vec::new(), params(3, T0 + 7))
        .await
        .unwrap();
    assert_eq!(
        rest.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        [ids[2]]
    );
    assert_eq!(rest.next_due, None);
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

/// A tenant's slot time is the sum of its attempts' spans as the log records them, and its
/// CPU time the sum of their measured CPU times: a success, a failure retried and an
/// attempt lost count what they held (a lost one no CPU: none was measured); a task
/// handed back before it started, and the admin's batches, count nothing.
pub async fn a_tenants_slot_time_is_what_its_attempts_held(store: Arc<dyn Store>) {
    let m = setup(&store).await;
    let a = store.tenant_add("a".into(), T0).await.unwrap();
    let spec = BatchSpec {
        tenant: Some(a.id),
        ..BatchSpec::default()
    };
    let mine = batch(&store, spec).await;
    let admins = batch(&store, BatchSpec::default()).await;
    let twice = TaskSpec {
        max_attempts: 2,
        ..task(m, 0, None)
    };
    let tasks = vec![task(m, 0, None), twice, task(m, 0, None), task(m, 0, None)];
    store.task_submit(mine, admitted(tasks), T0).await.unwrap();
    let theirs = admitted(vec![task(m, 0, None)]);
    store.task_submit(admins, theirs, T0).await.unwrap();
    let claimed = claim(&store, "n1", 5, T0).await;
    assert_eq!(claimed.len(), 5);
    let of = |batch: BatchId| -> Vec<&ClaimedTask> {
        let mut tasks: Vec<_> = claimed.iter().filter(|t| t.batch == batch).collect();
        tasks.sort_by_key(|t| t.id);
        tasks
    };
    let (mine_claimed, admins_claimed) = (of(mine), of(admins));
    let ended = |task: &ClaimedTask, outcome, (started, ended): (Micros, Micros), (cpu, memory)| {
        Completion {
            started_at: started,
            cpu_micros: Some(cpu),
            memory_mib_seconds: Some(memory),
            http_bytes: None,
            ..completion(task, outcome, ended)
        }
    };
    let completions = vec![
        ended(
            mine_claimed[0],
            Outcome::Succeeded,
            (T0 + SECOND, T0 + 4 * SECOND),
            (700_000, 0.75),
        ),
        ended(
            mine_claimed[1],
            Outcome::GuestError,
            (T0 + SECOND, T0 + 3 * SECOND),
            (300_000, 0.25),
        ),
        ended(
            admins_claimed[0],
            Outcome::Succeeded,
            (T0, T0 + 50 * SECOND),
            (9 * SECOND, 64.0),
        ),
    ];
    store
        .task_complete(completions, T0 + 50 * SECOND)
        .await
        .unwrap();
    let after = store.tenant_get(a.id).await.unwrap();
    let held = after.slot_micros;
    assert_eq!(
        (held, after.cpu_micros, after.memory_mib_seconds),
        (5 * SECOND as u64, SECOND as u64, 1.0),
        "3 s held of a success and 2 s of a failure, which used 0.7 s and 0.3 s of CPU and \
         held 0.75 and 0.25 MiB-seconds"
    );

    let back = mine_claimed[2];
    store
        .task_hand_back(vec![(back.id, back.lease_token)], T0 + 50 * SECOND)
        .await
        .unwrap();
    start(&store, &[mine_claimed[3].clone()], T0 + 2 * SECOND).await;
    let rescued = store.lease_rescue(None, T0 + 100 * SECOND).await.unwrap();
    assert_eq!(rescued.ended.len(), 1, "the started task's lease was lost");
    let log = store
        .attempt_list(AttemptFilter {
            batch: Some(mine),
            ..Default::default()
        })
        .await
        .unwrap();
    let spans: i64 = log.iter().map(|(_, a)| a.ended_at - a.started_at).sum();
    let a = store.tenant_get(a.id).await.unwrap();
    assert_eq!(log.len(), 3, "a success, a failure and a lost attempt");
    assert_eq!(
        a.slot_micros, spans as u64,
        "the sum of its spans in the log"
    );
    assert!(a.slot_micros > held, "the lost attempt counts");
    let mut cpu: Vec<Option<Micros>> = log.iter().map(|(_, a)| a.cpu_micros).collect();
    cpu.sort();
    assert_eq!(
        cpu,
        [None, Some(300_000), Some(700_000)],
        "each attempt's CPU time in the log; none measured for the lost one"
    );
    assert_eq!(
        a.cpu_micros, SECOND as u64,
        "the sum of the log's CPU times"
    );
    let memory: f64 = log.iter().filter_map(|(_, a)| a.memory_mib_seconds).sum();
    assert_eq!(
        (a.memory_mib_seconds, memory),
        (1.0, 1.0),
        "the sum of the log's memory"
    );
    assert_eq!(a.running, 0);
}

/// Tenant `a` with `budget`, and a batch of it with three tasks ready at T0.
async fn budgeted_batch(store: &Arc<dyn Store>, budget: &str) -> (TenantInfo, BatchId) {
    let m = setup(store).await;
    let a = store.tenant_add("a".into(), T0).await.unwrap();
    let change = TenantChange {
        budget: Some(Some(Budget::parse(budget).unwrap())),
        ..TenantChange::default()
    };
    store.tenant_set("a".into(), change, T0).await.unwrap();
    let spec = BatchSpec {
        tenant: Some(a.id),
        ..BatchSpec::default()
    };
    let mine = batch(store, spec).await;
    let tasks = admitted((0..3).map(|_| task(m, 0, None)).collect());
    store.task_submit(mine, tasks, T0).await.unwrap();
    (a, mine)
}

/// A tenant's CPU budget, 1 s per hour: each task claimed carries what is left of it; the
/// completion that spends it says the tenant is held, and no claim takes the tenant's
/// tasks before the window's end, when the next claim is due and they go on with the whole
/// budget again.
pub async fn a_tenants_budget_holds_it_to_the_windows_end(store: Arc<dyn Store>) {
    budgeted_batch(&store, "1s/1h").await;
    let burn = |store: &Arc<dyn Store>, task: &ClaimedTask, cpu: Micros, at: Micros| {
        let done = Completion {
            cpu_micros: Some(cpu),
            ..completion(task, Outcome::Succeeded, at)
        };
        let store = store.clone();
        async move { store.task_complete(vec![done], at).await.unwrap() }
    };

    let first = claim(&store, "n1", 1, T0).await;
    let cpu_left = |task: &ClaimedTask| task.budget_left.cpu_micros;
    assert_eq!(cpu_left(&first[0]), Some(SECOND), "the whole budget");
    assert_eq!(first[0].budget_left.http_bytes, None, "HTTP is not metered");
    let spent = burn(&store, &first[0], 400_000, T0 + SECOND).await;
    assert!(!spent.tenant_held, "0.4 s of 1 s");
    let second = claim(&store, "n1", 1, T0 + SECOND).await;
    assert_eq!(cpu_left(&second[0]), Some(600_000), "what the first left");
    let spent = burn(&store, &second[0], 700_000, T0 + 2 * SECOND).await;
    assert!(spent.tenant_held, "1.1 s of 1 s");

    let window_end = T0 - T0 % (3600 * SECOND) + 3600 * SECOND;
    let held = claim_all(&store, "n1", 1, T0 + 3 * SECOND).await;
    assert!(held.tasks.is_empty(), "held to the window's end");
    assert_eq!(
        held.next_due,
        Some(window_end),
        "the claim wakes at its end"
    );
    let next = claim(&store, "n1", 1, window_end).await;
    assert_eq!(
        cpu_left(&next[0]),
        Some(SECOND),
        "a new window, the whole budget"
    );
}

/// A budget of memory-time and HTTP bytes alone: each task claimed carries what is left of
/// both; the completion that reaches either holds the tenant, and the tenant's and the
/// batch's usage count both.
pub async fn a_tenants_memory_and_http_budget_holds_it(store: Arc<dyn Store>) {
    let (a, mine) = budgeted_batch(&store, "memory=10,http=1kB/1h").await;
    let end = |store: &Arc<dyn Store>, task: &ClaimedTask, (memory, http), at: Micros| {
        let done = Completion {
            memory_mib_seconds: Some(memory),
            http_bytes: Some(http),
            ..completion(task, Outcome::Succeeded, at)
        };
        let store = store.clone();
        async move { store.task_complete(vec![done], at).await.unwrap() }
    };

    let first = claim(&store, "n1", 1, T0).await;
    let whole = Left {
        cpu_micros: None,
        memory_mib_ms: Some(10_000),
        http_bytes: Some(1_000),
    };
    assert_eq!(first[0].budget_left, whole, "the whole budget");
    let spent = end(&store, &first[0], (4.0, 300), T0 + SECOND).await;
    assert!(!spent.tenant_held, "4 of 10 MiB-s, 300 of 1000 bytes");
    let second = claim(&store, "n1", 1, T0 + SECOND).await;
    let left = Left {
        memory_mib_ms: Some(6_000),
        http_bytes: Some(700),
        ..whole
    };
    assert_eq!(second[0].budget_left, left, "what the first left");
    let spent = end(&store, &second[0], (1.0, 700), T0 + 2 * SECOND).await;
    assert!(spent.tenant_held, "1000 of 1000 bytes: HTTP alone holds it");
    let held = claim_all(&store, "n1", 1, T0 + 3 * SECOND).await;
    assert!(held.tasks.is_empty(), "held to the window's end");

    // The window's use is read at the real time, past T0's window: the totals alone.
    let info = store.tenant_get(a.id).await.unwrap();
    assert_eq!((info.memory_mib_seconds, info.http_bytes), (5.0, 1_000));
    let usage = store.batch_usage(mine).await.unwrap();
    assert_eq!((usage.memory_mib_seconds, usage.http_bytes), (5.0, 1_000));
}
