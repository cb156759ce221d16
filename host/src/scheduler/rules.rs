//! The scheduling rules, stated once as plain functions: over an execution log, and
//! over what holds a pending task back ([`waiting_on`]).
//!
//! The store drivers enforce these rules inside their atomic claim; these functions say
//! what the rules mean, and the tests check every run's execution log against them.
//! An interval is one attempt: the time it started and the time it ended.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::store::{AttemptRecord, BatchId, HoldFacts, Micros, OpenDep};

/// What holds a pending task back: why no node claims it now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WaitingOn {
    /// Its batch's gate: a lower order, `order`, still has `open` tasks not ended.
    Gate { order: i64, open: u64 },
    /// Tasks it runs after (`after`): `open` of them have not ended; `tasks` names the
    /// first of them by id (at most 10), with their keys.
    After { open: u64, tasks: Vec<OpenDep> },
    /// Its batch is paused.
    BatchPaused,
    /// Its group is paused.
    GroupPaused { group: String },
    /// It was delayed (`run_at`, `delay`) until `until`.
    Delay { until: Micros },
    /// It waits out the backoff after its `attempts`-th attempt, until `until`.
    Retry { until: Micros, attempts: u32 },
    /// Its group is held until `until`: a task of it was deferred (`retry-after`).
    Held { group: String, until: Micros },
    /// Its tenant spent its CPU budget: none of its tasks starts before `until`, when the
    /// budget's next window starts.
    Budget { tenant: String, until: Micros },
    /// Its group's rate has no token left until `until`.
    Rate { group: String, until: Micros },
    /// Its group has `running` tasks claimed, its limit.
    Group {
        group: String,
        #[schema(format = Int64, maximum = 4294967295_u64)]
        limit: u32,
        running: u64,
    },
    /// Its batch has `running` tasks claimed, its `max_parallel`.
    Batch {
        #[schema(format = Int64, maximum = 4294967295_u64)]
        max_parallel: u32,
        running: u64,
    },
    /// Its tenant has `running` tasks claimed, its `max_running`, across its batches.
    Tenant {
        tenant: String,
        #[schema(format = Int64, maximum = 4294967295_u64)]
        max_running: u32,
        running: u64,
    },
}

/// Why a task is not claimed at `now`, as the claim's rules say, in the order a person
/// would lift them: its gate; else a pause; else its delay or backoff; else its group's
/// hold, its tenant's budget, its group's limit, its group's rate, its batch's limit,
/// then its tenant's. `None`: it is not pending, or a node may claim it now.
/// The stores' list filters state the same rules in SQL (`sql/task_list.sql`).
pub fn waiting_on(facts: &HoldFacts, now: Micros) -> Option<WaitingOn> {
    match facts.state {
        0 => match facts.gate {
            Some((order, open)) => Some(WaitingOn::Gate { order, open }),
            None if facts.deps_open > 0 => Some(WaitingOn::After {
                open: facts.deps_open,
                tasks: facts.deps.clone(),
            }),
            None => None,
        },
        1 => {
            let group = facts.group.as_ref();
            if facts.batch_paused {
                return Some(WaitingOn::BatchPaused);
            }
            if let Some(g) = group.filter(|g| g.paused) {
                return Some(WaitingOn::GroupPaused {
                    group: g.key.clone(),
                });
            }
            if facts.not_before > now {
                let until = facts.not_before;
                return Some(match facts.attempts {
                    0 => WaitingOn::Delay { until },
                    attempts => WaitingOn::Retry { until, attempts },
                });
            }
            if let Some(g) = group.filter(|g| crate::store::hold::holds(g.held_until, now)) {
                return Some(WaitingOn::Held {
                    group: g.key.clone(),
                    until: g.held_until,
                });
            }
            if let Some(n) = facts
                .tenant
                .as_ref()
                .filter(|n| crate::store::hold::holds(n.held_until, now))
            {
                return Some(WaitingOn::Budget {
                    tenant: n.name.clone(),
                    until: n.held_until,
                });
            }
            if let Some(g) = group.filter(|g| g.running >= u64::from(g.limit)) {
                return Some(WaitingOn::Group {
                    group: g.key.clone(),
                    limit: g.limit,
                    running: g.running,
                });
            }
            if let Some((g, bucket)) = group.and_then(|g| Some((g, g.rate?)))
                && bucket.tokens(now) == 0
            {
                return Some(WaitingOn::Rate {
                    group: g.key.clone(),
                    until: bucket.next_token(),
                });
            }
            if let Some(max) = facts.batch_max_parallel
                && facts.batch_running >= u64::from(max)
            {
                return Some(WaitingOn::Batch {
                    max_parallel: max,
                    running: facts.batch_running,
                });
            }
            let n = facts.tenant.as_ref()?;
            let max = n.max_running.filter(|&max| n.running >= u64::from(max))?;
            Some(WaitingOn::Tenant {
                tenant: n.name.clone(),
                max_running: max,
                running: n.running,
            })
        }
        _ => None,
    }
}

/// One attempt as the rules see it.
#[derive(Debug, Clone)]
pub struct Span {
    pub task: i64,
    pub batch: BatchId,
    pub order: i64,
    pub group: Option<String>,
    pub start: Micros,
    pub end: Micros,
}

impl From<&AttemptRecord> for Span {
    fn from(a: &AttemptRecord) -> Self {
        Span {
            task: a.task,
            batch: a.batch,
            order: a.order,
            group: a.group.clone(),
            start: a.started_at,
            end: a.ended_at,
        }
    }
}

/// The largest number of spans that overlap at one instant (touching spans do not).
pub fn peak_overlap<'a>(spans: impl IntoIterator<Item = &'a Span>) -> usize {
    let mut events: Vec<(Micros, i32)> = Vec::new();
    for span in spans {
        events.push((span.start, 1));
        events.push((span.end, -1));
    }
    // At equal times an end sorts before a start.
    events.sort();
    let (mut now, mut peak) = (0i32, 0i32);
    for (_, delta) in events {
        now += delta;
        peak = peak.max(now);
    }
    peak as usize
}

/// Rule 1, bounded parallelism: at most `slots` attempts run at once.
pub fn check_parallelism(spans: &[Span], slots: usize) -> Result<(), String> {
    let peak = peak_overlap(spans);
    if peak > slots {
        return Err(format!("{peak} attempts ran at once on {slots} slots"));
    }
    Ok(())
}

/// Rule 2, ordering gate: no attempt of order k starts before every attempt of a lower
/// order in its batch has ended. This holds for a batch without re-drives: a re-driven
/// task of a lower order runs again after higher orders have started, by design (the
/// re-drive reopens the gate only for tasks that have not started).
pub fn check_gates(spans: &[Span]) -> Result<(), String> {
    let mut by_batch: HashMap<BatchId, Vec<&Span>> = HashMap::new();
    for span in spans {
        by_batch.entry(span.batch).or_default().push(span);
    }
    for (batch, spans) in by_batch {
        // The latest end of each order, then check every start against lower orders.
        let mut last_end: HashMap<i64, Micros> = HashMap::new();
        for s in &spans {
            let end = last_end.entry(s.order).or_insert(s.end);
            *end = (*end).max(s.end);
        }
        for s in &spans {
            for (&order, &end) in &last_end {
                if order < s.order && s.start < end {
                    return Err(format!(
                        "batch {batch}: task {} of order {} started at {} before order {order} ended at {end}",
                        s.task, s.order, s.start
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Rule 3, group locks: at most `limit(group)` attempts of a group run at once.
pub fn check_group_limits(spans: &[Span], limit: impl Fn(&str) -> usize) -> Result<(), String> {
    let mut by_group: HashMap<&str, Vec<Span>> = HashMap::new();
    for span in spans {
        if let Some(group) = &span.group {
            by_group.entry(group).or_default().push(span.clone());
        }
    }
    for (group, spans) in by_group {
        let peak = peak_overlap(&spans);
        if peak > limit(group) {
            return Err(format!(
                "group {group}: {peak} attempts ran at once, its limit is {}",
                limit(group)
            ));
        }
    }
    Ok(())
}

/// Rule 4, batch limit: at most `max_parallel(batch)` attempts of a batch run at once.
pub fn check_batch_limits(
    spans: &[Span],
    max_parallel: impl Fn(BatchId) -> Option<usize>,
) -> Result<(), String> {
    let mut by_batch: HashMap<BatchId, Vec<Span>> = HashMap::new();
    for span in spans {
        by_batch.entry(span.batch).or_default().push(span.clone());
    }
    for (batch, spans) in by_batch {
        if let Some(max) = max_parallel(batch) {
            let peak = peak_overlap(&spans);
            if peak > max {
                return Err(format!(
                    "batch {batch}: {peak} attempts ran at once, its max_parallel is {max}"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(task: i64, order: i64, group: Option<&str>, start: Micros, end: Micros) -> Span {
        Span {
            task,
            batch: 1,
            order,
            group: group.map(String::from),
            start,
            end,
        }
    }

    #[test]
    fn waiting_on_names_what_a_person_lifts_first() {
        use crate::store::GroupFacts;
        let ready = HoldFacts {
            state: 1,
            group: Some(GroupFacts {
                key: "g".into(),
                paused: false,
                limit: 1,
                running: 1,
                rate: None,
                held_until: 0,
            }),
            batch_max_parallel: Some(2),
            batch_running: 2,
            ..HoldFacts::default()
        };
        let group = WaitingOn::Group {
            group: "g".into(),
            limit: 1,
            running: 1,
        };
        assert_eq!(waiting_on(&ready, 10), Some(group));
        let delayed = HoldFacts {
            not_before: 20,
            attempts: 1,
            ..ready.clone()
        };
        assert_eq!(
            waiting_on(&delayed, 10),
            Some(WaitingOn::Retry {
                until: 20,
                attempts: 1
            })
        );
        assert_eq!(
            waiting_on(&delayed, 20),
            waiting_on(&ready, 20),
            "due once its time comes"
        );
        let free = HoldFacts {
            group: None,
            batch_max_parallel: None,
            ..ready.clone()
        };
        assert_eq!(waiting_on(&free, 10), None, "claimable now");
        // A rate of one task per 100 µs whose last token went until 50.
        let rated = HoldFacts {
            group: Some(GroupFacts {
                key: "g".into(),
                paused: false,
                limit: 1,
                running: 0,
                rate: Some(crate::store::Bucket::new(1, 100, 1, 50)),
                held_until: 0,
            }),
            batch_max_parallel: None,
            ..ready.clone()
        };
        assert_eq!(
            waiting_on(&rated, 10),
            Some(WaitingOn::Rate {
                group: "g".into(),
                until: 50
            })
        );
        assert_eq!(waiting_on(&rated, 50), None, "a token back at 50");
        let mut held = rated.clone();
        if let Some(g) = held.group.as_mut() {
            g.held_until = 80;
        }
        assert_eq!(
            waiting_on(&held, 60),
            Some(WaitingOn::Held {
                group: "g".into(),
                until: 80
            }),
            "a hold is lifted before the rate's next token"
        );
        assert_eq!(waiting_on(&held, 80), None, "let go at 80");
        let tenant = |held_until, running| crate::store::TenantFacts {
            name: "t".into(),
            max_running: Some(2),
            running,
            held_until,
        };
        let spent = HoldFacts {
            tenant: Some(tenant(90, 0)),
            ..held.clone()
        };
        assert_eq!(
            waiting_on(&spent, 60),
            Some(WaitingOn::Held {
                group: "g".into(),
                until: 80
            }),
            "its group's hold first"
        );
        assert_eq!(
            waiting_on(&spent, 85),
            Some(WaitingOn::Budget {
                tenant: "t".into(),
                until: 90
            })
        );
        assert_eq!(waiting_on(&spent, 90), None, "let go at 90");
        let full = HoldFacts {
            tenant: Some(tenant(0, 2)),
            ..free.clone()
        };
        assert_eq!(
            waiting_on(&full, 10),
            Some(WaitingOn::Tenant {
                tenant: "t".into(),
                max_running: 2,
                running: 2
            })
        );
        let running = HoldFacts { state: 2, ..ready };
        assert_eq!(waiting_on(&running, 10), None, "not pending");
    }

    #[test]
    fn gates_are_checked_against_every_lower_order() {
        let ok = [
            span(1, 1, None, 0, 10),
            span(2, 1, None, 5, 20),
            span(3, 2, None, 20, 30),
        ];
        assert!(check_gates(&ok).is_ok());
        let crossed = [
            span(1, 1, None, 0, 10),
            span(2, 1, None, 5, 20),
            span(3, 2, None, 15, 30),
        ];
        assert!(check_gates(&crossed).unwrap_err().contains("task 3"));
    }

    #[test]
    fn group_limits_count_overlaps_only() {
        let spans = [
            span(1, 0, Some("a"), 0, 10),
            span(2, 0, Some("a"), 10, 20),
            span(3, 0, Some("b"), 5, 15),
        ];
        assert!(check_group_limits(&spans, |_| 1).is_ok());
        let overlapping = [span(1, 0, Some("a"), 0, 10), span(2, 0, Some("a"), 9, 20)];
        assert!(check_group_limits(&overlapping, |_| 1).is_err());
        assert!(check_group_limits(&overlapping, |_| 2).is_ok());
        assert_eq!(
            check_parallelism(&spans, 1),
            Err("2 attempts ran at once on 1 slots".into())
        );
    }
}
