//! The statements every task passes through on PostgreSQL (submit, claim and its look
//! behind the window, start, complete, hand back, lease renewal, prune), each with the indexes
//! its plan must use. `tests/tests/plans_postgres.rs` reads each one's generic plan back
//! on a filled store, before and after `ANALYZE`, and holds it to this list: an index
//! added for some other read must not take a hot plan over.

use super::claim;

/// A hot statement and the indexes its plan reads, each as `index on table`. Only the
/// tables that grow with the queue are named: the planner reads batches, groups and
/// orders as their size makes cheapest, which is a whole read of a few pages while they
/// are few.
pub struct Hot {
    pub name: &'static str,
    pub sql: &'static str,
    pub indexes: &'static [&'static str],
}

/// The tables a hot statement may never read whole: they grow with the queue or the log.
pub const LARGE_TABLES: &[&str] = &["tasks", "ready", "attempts", "dead_letters"];

pub const HOT: &[Hot] = &[
    Hot {
        name: "prune: the ended tasks past their retention",
        sql: include_str!("sql/prune_pick.sql"),
        indexes: &["tasks_list_submitted on tasks"],
    },
    Hot {
        name: "submit: the tasks",
        sql: include_str!("sql/submit_tasks.sql"),
        indexes: &[],
    },
    Hot {
        name: "submit: the orders",
        sql: include_str!("sql/submit_orders.sql"),
        indexes: &[],
    },
    Hot {
        name: "claim: the window",
        sql: claim::WINDOW_SQL,
        indexes: &["ready_order on ready", "tasks_costly on tasks"],
    },
    Hot {
        name: "claim: the look behind the window",
        sql: claim::BEYOND_SQL,
        indexes: &[
            "ready_free on ready",
            "ready_group on ready",
            "tasks_costly on tasks",
        ],
    },
    Hot {
        name: "claim: the tenants with ready work, for the fair share",
        sql: super::share::LANES_SQL,
        indexes: &["ready_lanes on ready"],
    },
    Hot {
        name: "claim: the batches' counters locked",
        sql: claim::LOCK_BATCHES_SQL,
        indexes: &[],
    },
    Hot {
        name: "claim: the groups' counters locked",
        sql: claim::LOCK_GROUPS_SQL,
        indexes: &[],
    },
    Hot {
        name: "claim: the picks locked",
        sql: claim::LOCK_SQL,
        indexes: &["tasks_pkey on tasks"],
    },
    Hot {
        name: "claim: the picks taken",
        sql: claim::TAKE_SQL,
        indexes: &["tasks_pkey on tasks", "ready_pkey on ready"],
    },
    Hot {
        name: "claim: the batches counted",
        sql: include_str!("sql/claim_count_batches.sql"),
        indexes: &[],
    },
    Hot {
        name: "claim: the groups counted",
        sql: include_str!("sql/claim_count_groups.sql"),
        indexes: &[],
    },
    Hot {
        name: "claim: the tenants counted",
        sql: include_str!("sql/claim_count_tenants.sql"),
        indexes: &[],
    },
    Hot {
        name: "claim: the next delayed task due",
        sql: claim::NEXT_DUE_SQL,
        indexes: &["ready_delayed on ready"],
    },
    Hot {
        name: "claim: the next token of a group with a rate",
        sql: claim::NEXT_RATE_SQL,
        indexes: &["ready_group on ready"],
    },
    Hot {
        name: "claim: the end of the next hold of a group",
        sql: claim::NEXT_HOLD_SQL,
        indexes: &["ready_group on ready"],
    },
    Hot {
        name: "claim: the end of the next hold of a tenant",
        sql: claim::NEXT_TENANT_HOLD_SQL,
        indexes: &[],
    },
    Hot {
        name: "start marks",
        sql: include_str!("sql/task_start.sql"),
        indexes: &[],
    },
    Hot {
        name: "complete: successes",
        sql: include_str!("sql/complete_succeeded.sql"),
        indexes: &["tasks_pkey on tasks"],
    },
    Hot {
        name: "complete: tasks locked",
        sql: include_str!("sql/running_lock.sql"),
        indexes: &["tasks_pkey on tasks"],
    },
    Hot {
        name: "complete: batches freed",
        sql: include_str!("sql/complete_free_batches.sql"),
        indexes: &[],
    },
    Hot {
        name: "complete: groups freed",
        sql: include_str!("sql/complete_free_groups.sql"),
        indexes: &[],
    },
    Hot {
        name: "complete: tenants freed",
        sql: include_str!("sql/complete_free_tenants.sql"),
        indexes: &[],
    },
    Hot {
        name: "complete: a retry",
        sql: include_str!("sql/complete_retry.sql"),
        indexes: &["tasks_pkey on tasks"],
    },
    Hot {
        name: "complete: an end",
        sql: include_str!("sql/complete_ended.sql"),
        indexes: &["tasks_pkey on tasks"],
    },
    Hot {
        name: "complete: orders closed",
        sql: include_str!("sql/gate_close.sql"),
        indexes: &[],
    },
    Hot {
        name: "complete: gates promoted",
        sql: include_str!("sql/gate_promote.sql"),
        indexes: &["tasks_batch on tasks"],
    },
    Hot {
        name: "hand back",
        sql: include_str!("sql/hand_back.sql"),
        indexes: &["tasks_pkey on tasks"],
    },
    Hot {
        name: "lease renewal",
        sql: include_str!("sql/lease_renew.sql"),
        indexes: &["tasks_pkey on tasks"],
    },
];
