//! The model checked against hand-worked cases of each rule.

use super::*;
use crate::store::{CancelResult, FailurePolicy};

const NOW: Micros = 1_000;

fn new_task(order: i64, group: Option<&str>) -> NewTask {
    NewTask {
        order,
        group: group.map(str::to_owned),
        priority: None,
        max_attempts: 1,
        not_before: None,
        after: Vec::new(),
        cost: 1,
    }
}

fn ids(outcome: ClaimOutcome) -> Vec<TaskId> {
    outcome.tasks.into_iter().map(|(id, _)| id).collect()
}

#[test]
fn a_gate_holds_back_higher_orders_until_lower_ones_end() {
    let mut m = Model::new();
    let b = m.open_batch(0, None, FailurePolicy::Continue);
    let t = m
        .submit(
            b,
            &[new_task(0, None), new_task(1, None), new_task(0, None)],
        )
        .unwrap();
    assert_eq!(m.state(t[1]), Some(TaskState::Waiting));
    assert_eq!(ids(m.claim(NOW, 10)), [t[0], t[2]]);
    m.complete(t[0], Ending::Success, NOW);
    assert!(m.claim(NOW, 10).tasks.is_empty());
    m.complete(t[2], Ending::Success, NOW);
    assert_eq!(m.state(t[1]), Some(TaskState::Ready));
    assert_eq!(ids(m.claim(NOW, 10)), [t[1]]);
}

#[test]
fn a_lower_order_moves_the_gate_down_until_one_above_it_started() {
    let mut m = Model::new();
    let b = m.open_batch(0, None, FailurePolicy::Continue);
    let high = m.submit(b, &[new_task(2, None)]).unwrap();
    let low = m.submit(b, &[new_task(1, None)]).unwrap();
    assert_eq!(m.state(high[0]), Some(TaskState::Waiting));
    assert_eq!(ids(m.claim(NOW, 10)), low);
    assert_eq!(
        m.submit(b, &[new_task(0, None)]),
        Err(Refused::BelowStarted {
            order: 0,
            started: 1
        })
    );
    // Handed back, the order still counts as started.
    m.hand_back(low[0]);
    assert!(m.submit(b, &[new_task(0, None)]).is_err());
    assert!(m.submit(b, &[new_task(1, None)]).is_ok());
}

#[test]
fn a_group_gives_one_task_per_claim_by_default_and_more_with_a_higher_limit() {
    let mut m = Model::new();
    let b = m.open_batch(0, None, FailurePolicy::Continue);
    let t = m
        .submit(b, &[new_task(0, Some("g")), new_task(0, Some("g"))])
        .unwrap();
    assert_eq!(ids(m.claim(NOW, 10)), [t[0]]);
    assert!(m.claim(NOW, 10).tasks.is_empty());
    m.set_group_limit("g", 2);
    assert_eq!(ids(m.claim(NOW, 10)), [t[1]]);
}

#[test]
fn a_full_group_does_not_block_the_tasks_behind_it() {
    let mut m = Model::new();
    let b = m.open_batch(0, None, FailurePolicy::Continue);
    let t = m
        .submit(
            b,
            &[
                new_task(0, Some("g")),
                new_task(0, Some("g")),
                new_task(0, Some("g")),
                new_task(0, None),
                new_task(0, Some("h")),
            ],
        )
        .unwrap();
    assert_eq!(ids(m.claim(NOW, 3)), [t[0], t[3], t[4]]);
}

#[test]
fn a_batch_limit_bounds_its_batch_only() {
    let mut m = Model::new();
    let limited = m.open_batch(1, Some(2), FailurePolicy::Continue);
    let free = m.open_batch(0, None, FailurePolicy::Continue);
    let l = m.submit(limited, &vec![new_task(0, None); 5]).unwrap();
    let f = m.submit(free, &[new_task(0, None)]).unwrap();
    assert_eq!(ids(m.claim(NOW, 4)), [l[0], l[1], f[0]]);
    m.complete(l[0], Ending::Success, NOW);
    assert_eq!(ids(m.claim(NOW, 4)), [l[2]]);
}

#[test]
fn priority_goes_first_and_changes_only_tasks_not_started() {
    let mut m = Model::new();
    let b = m.open_batch(0, None, FailurePolicy::Continue);
    let t = m
        .submit(
            b,
            &[
                new_task(0, None),
                NewTask {
                    priority: Some(5),
                    ..new_task(0, None)
                },
                new_task(0, None),
            ],
        )
        .unwrap();
    assert_eq!(ids(m.claim(NOW, 1)), [t[1]]);
    assert!(m.set_task_priority(t[2], 9));
    m.start(t[1]);
    assert!(
        !m.set_task_priority(t[1], 0),
        "a started task keeps its priority"
    );
    assert_eq!(m.set_batch_priority(b, 3), 2);
    assert_eq!(m.task(t[1]).unwrap().priority, 5);
    // The batch's priority moved both pending tasks to 3: first in, first out again.
    assert_eq!(ids(m.claim(NOW, 2)), [t[0], t[2]]);
}

#[test]
fn a_later_small_batch_is_not_starved_by_a_large_one() {
    let mut m = Model::new();
    let large = m.open_batch(0, None, FailurePolicy::Continue);
    let l = m.submit(large, &vec![new_task(0, None); 10]).unwrap();
    assert_eq!(ids(m.claim(NOW, 2)), [l[0], l[1]]);
    // The clock is at vseq 1: the small batch starts there, beside the large one's 2.
    let small = m.open_batch(0, None, FailurePolicy::Continue);
    let s = m.submit(small, &vec![new_task(0, None); 2]).unwrap();
    assert_eq!(m.task(s[0]).unwrap().vseq, 1);
    assert_eq!(ids(m.claim(NOW, 4)), [s[0], l[2], s[1], l[3]]);
}

#[test]
fn failures_are_retried_then_fail_and_a_halting_batch_cancels_the_rest() {
    let mut m = Model::new();
    let b = m.open_batch(0, None, FailurePolicy::Halt);
    let t = m
        .submit(
            b,
            &[
                NewTask {
                    max_attempts: 2,
                    ..new_task(0, None)
                },
                new_task(1, None),
            ],
        )
        .unwrap();
    assert_eq!(m.claim(NOW, 1).tasks, [(t[0], 1)]);
    assert_eq!(m.complete(t[0], Ending::Failure, NOW), Some(Phase::Pending));
    assert_eq!(m.claim(NOW, 1).tasks, [(t[0], 2)]);
    assert_eq!(m.complete(t[0], Ending::Failure, NOW), Some(Phase::Failed));
    assert_eq!(m.state(t[1]), Some(TaskState::Cancelled));
}

#[test]
fn a_cancelled_claimed_task_ends_when_its_attempt_does_and_is_not_retried() {
    let mut m = Model::new();
    let b = m.open_batch(0, None, FailurePolicy::Continue);
    let t = m
        .submit(
            b,
            &[
                NewTask {
                    max_attempts: 3,
                    ..new_task(0, None)
                },
                new_task(0, None),
            ],
        )
        .unwrap();
    m.claim(NOW, 1);
    assert_eq!(m.cancel(t[0]), Some(CancelResult::Requested));
    assert_eq!(m.cancel(t[1]), Some(CancelResult::Cancelled));
    assert_eq!(m.state(t[0]), Some(TaskState::Reserved));
    assert_eq!(
        m.complete(t[0], Ending::Failure, NOW),
        Some(Phase::Cancelled)
    );
}

#[test]
fn a_task_not_yet_due_is_passed_over_and_reported_as_next_due() {
    let mut m = Model::new();
    let b = m.open_batch(0, None, FailurePolicy::Continue);
    let t = m
        .submit(
            b,
            &[
                NewTask {
                    not_before: Some(NOW + 50),
                    ..new_task(0, None)
                },
                new_task(0, None),
            ],
        )
        .unwrap();
    let outcome = m.claim(NOW, 5);
    assert_eq!(outcome.tasks, [(t[1], 1)]);
    assert_eq!(outcome.next_due, Some(NOW + 50));
    assert_eq!(ids(m.claim(NOW + 50, 5)), [t[0]]);
}

#[test]
fn a_paused_group_or_batch_holds_its_tasks_and_resumes_them_in_order() {
    let mut m = Model::new();
    let b = m.open_batch(0, None, FailurePolicy::Continue);
    let t = m
        .submit(
            b,
            &[
                new_task(0, Some("g")),
                new_task(0, Some("g")),
                new_task(0, None),
            ],
        )
        .unwrap();
    m.set_group_paused("g", true);
    assert_eq!(m.state(t[0]), Some(TaskState::Held));
    assert_eq!(ids(m.claim(NOW, 10)), [t[2]]);
    m.set_group_paused("g", false);
    assert_eq!(ids(m.claim(NOW, 10)), [t[0]], "its limit of 1 is back");
    m.set_batch_paused(b, true);
    assert_eq!(m.state(t[1]), Some(TaskState::Held));
    m.set_group_limit("g", 2);
    assert!(m.claim(NOW, 10).tasks.is_empty());
    m.set_batch_paused(b, false);
    assert_eq!(ids(m.claim(NOW, 10)), [t[1]]);
    m.set_batch_max_parallel(b, Some(0));
    assert_eq!(m.batches[&b].max_parallel, Some(0));
}

#[test]
fn a_retried_task_gets_its_budget_again_and_reopens_its_gate() {
    let mut m = Model::new();
    let b = m.open_batch(0, None, FailurePolicy::Continue);
    let t = m
        .submit(
            b,
            &[new_task(0, None), new_task(1, None), new_task(1, None)],
        )
        .unwrap();
    m.claim(NOW, 1);
    assert_eq!(m.complete(t[0], Ending::Failure, NOW), Some(Phase::Failed));
    assert_eq!(ids(m.claim(NOW, 1)), [t[1]]);
    m.start(t[1]);
    let select = crate::store::TaskSelect::task(t[0]);
    assert_eq!(m.retry(&select), Ok(1));
    assert_eq!(m.retry(&select), Ok(0), "it is pending now");
    assert_eq!(m.state(t[0]), Some(TaskState::Ready));
    assert_eq!(m.state(t[1]), Some(TaskState::Running));
    assert_eq!(m.state(t[2]), Some(TaskState::Waiting));
    assert_eq!(m.claim(NOW, 5).tasks, [(t[0], 2)], "attempts go on");
    assert_eq!(
        m.complete(t[0], Ending::Lost, NOW),
        Some(Phase::Failed),
        "one attempt again, used up"
    );
    assert_eq!(m.task(t[0]).unwrap().outcome, Some(Outcome::Lost));
}

fn after(order: i64, deps: &[(NewDep, OnFailure)]) -> NewTask {
    NewTask {
        after: deps.to_vec(),
        ..new_task(order, None)
    }
}

#[test]
fn a_task_waits_for_the_tasks_it_runs_after() {
    use crate::store::OnFailure::Cancel;
    let mut m = Model::new();
    let b = m.open_batch(0, None, FailurePolicy::Continue);
    let (e0, e1, e2) = (NewDep::Earlier(0), NewDep::Earlier(1), NewDep::Earlier(2));
    let t = m
        .submit(
            b,
            &[
                new_task(0, None),
                after(0, &[(e0, Cancel)]),
                after(0, &[(e0, Cancel)]),
                after(0, &[(e1, Cancel), (e2, Cancel)]),
            ],
        )
        .unwrap();
    assert_eq!(m.state(t[3]), Some(TaskState::Waiting));
    assert_eq!(ids(m.claim(NOW, 10)), vec![t[0]]);
    m.complete(t[0], Ending::Success, NOW);
    assert_eq!(ids(m.claim(NOW, 10)), vec![t[1], t[2]]);
    m.complete(t[1], Ending::Success, NOW);
    assert!(ids(m.claim(NOW, 10)).is_empty(), "t3 waits for t2 still");
    m.complete(t[2], Ending::Success, NOW);
    assert_eq!(ids(m.claim(NOW, 10)), vec![t[3]]);
    let err = m.submit(b, &[after(0, &[(NewDep::Stored(99), Cancel)])]);
    assert_eq!(err, Err(Refused::UnknownDep { index: 0 }));
    let err = m.submit(b, &[new_task(2, None), after(1, &[(e0, Cancel)])]);
    assert_eq!(err, Err(Refused::DepAbove { index: 1 }));
}

#[test]
fn a_failed_dependency_cancels_runs_or_skips_and_a_retry_waits_again() {
    use crate::store::OnFailure::{Cancel, Run, Skip};
    let mut m = Model::new();
    let b = m.open_batch(0, None, FailurePolicy::Continue);
    let e0 = NewDep::Earlier(0);
    let t = m
        .submit(
            b,
            &[
                new_task(0, None),
                after(0, &[(e0, Cancel)]),
                after(0, &[(e0, Run)]),
                after(0, &[(e0, Skip)]),
                after(0, &[(NewDep::Earlier(3), Cancel)]),
                after(0, &[(NewDep::Earlier(1), Run)]),
            ],
        )
        .unwrap();
    m.claim(NOW, 10);
    m.complete(t[0], Ending::Failure, NOW);
    let outcome = |m: &Model, i: usize| m.task(t[i]).unwrap().outcome;
    assert_eq!(outcome(&m, 1), Some(Outcome::Cancelled));
    assert_eq!(outcome(&m, 3), Some(Outcome::Skipped));
    assert_eq!(ids(m.claim(NOW, 10)), vec![t[2], t[4], t[5]]);
    // Run again, t0 holds back nothing that has started; t1, cancelled, stays so.
    let select = crate::store::TaskSelect {
        task: Some(t[0]),
        ..Default::default()
    };
    assert_eq!(m.retry(&select), Ok(1));
    assert_eq!(m.state(t[1]), Some(TaskState::Cancelled));
}

#[test]
fn a_tenant_limit_counts_every_batch_of_the_tenant_and_no_other() {
    let mut m = Model::new();
    let a1 = m.open_batch(0, None, FailurePolicy::Continue);
    let a2 = m.open_batch(0, None, FailurePolicy::Continue);
    let other = m.open_batch(0, None, FailurePolicy::Continue);
    m.set_batch_tenant(a1, 1);
    m.set_batch_tenant(a2, 1);
    m.set_batch_tenant(other, 2);
    m.set_tenant_limit(1, Some(2));
    let t1 = m
        .submit(a1, &[new_task(0, None), new_task(0, None)])
        .unwrap();
    let t2 = m.submit(a2, &[new_task(0, None)]).unwrap();
    let t3 = m
        .submit(other, &[new_task(0, None), new_task(0, None)])
        .unwrap();
    // Fair queueing takes each batch's first task first: tenant 1's third task (its
    // first batch's second) waits, and tenant 2's are taken past it.
    assert_eq!(ids(m.claim(NOW, 10)), [t1[0], t2[0], t3[0], t3[1]]);
    m.complete(t1[0], Ending::Success, NOW);
    assert_eq!(ids(m.claim(NOW, 10)), [t1[1]]);
    // A raised limit reaches what has not been claimed.
    m.set_tenant_limit(1, None);
    let more = m
        .submit(a1, &[new_task(0, None), new_task(0, None)])
        .unwrap();
    assert_eq!(ids(m.claim(NOW, 10)), more);
}

#[test]
fn a_claim_divides_its_slots_among_tenants_by_weight_whatever_their_priorities() {
    let mut m = Model::new();
    let mut batches = Vec::new();
    for (tenant, weight) in [(1, 1), (2, 2), (3, 5)] {
        // The lightest tenant's work has the highest priority: it orders its own work only.
        let b = m.open_batch(10 - tenant as i32, None, FailurePolicy::Continue);
        m.set_batch_tenant(b, tenant);
        m.set_tenant_weight(tenant, weight);
        m.submit(b, &vec![new_task(0, None); 10]).unwrap();
        batches.push(b);
    }
    let per_tenant = |m: &Model, claimed: &[TaskId]| {
        let mut counts = [0; 3];
        for &id in claimed {
            let batch = m.task(id).unwrap().batch;
            counts[batches.iter().position(|&b| b == batch).unwrap()] += 1;
        }
        counts
    };
    let claimed = ids(m.claim(NOW, 8));
    assert_eq!(per_tenant(&m, &claimed), [1, 2, 5]);
    // A tenant whose tasks wait on a full group leaves its share to the others.
    let grouped = m.open_batch(0, None, FailurePolicy::Continue);
    m.set_batch_tenant(grouped, 4);
    m.set_tenant_weight(4, 100);
    m.set_group_limit("full", 0);
    m.submit(grouped, &[new_task(0, Some("full"))]).unwrap();
    let claimed = ids(m.claim(NOW, 8));
    assert_eq!(claimed.len(), 8);
    assert_eq!(per_tenant(&m, &claimed).iter().sum::<i32>(), 8);
}
