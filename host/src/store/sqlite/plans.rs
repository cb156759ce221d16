//! Guards of the hot path's cost that cannot flake: the query plan of every statement a
//! task passes through (submit, claim and its looks, start, complete, hand back, lease
//! renewal), and the work a claim does counted in SQLite's VM steps at two queue sizes.
//!
//! An index added for some other read must not take over a claim's plan: each hot
//! statement names its index (`INDEXED BY`) or looks a row up by its key, and these tests
//! read the plans back on a store filled as a queue looks after a day of work, before and
//! after `ANALYZE`.

use rusqlite::{Connection, StatementStatus};

use super::{claim, complete, gate, graph};
use crate::store::*;

/// A hot statement, and what its plan must show: one fragment per table it reads.
struct Hot {
    name: &'static str,
    sql: &'static str,
    plan: &'static [&'static str],
}

const TASK_BY_ID: &str = "SEARCH tasks USING INTEGER PRIMARY KEY (rowid=?)";
const BATCH_BY_ID: &str = "SEARCH batches USING INTEGER PRIMARY KEY (rowid=?)";
const GROUP_BY_KEY: &str = "SEARCH groups USING PRIMARY KEY (key=?)";
const ORDER_BY_KEY: &str = "SEARCH batch_orders USING PRIMARY KEY (batch_id=? AND ord=?)";
const ORDERS_OF_BATCH: &str = "SEARCH o USING PRIMARY KEY (batch_id=?)";
const TENANT_OF_BATCH: &str = "SEARCH n USING INTEGER PRIMARY KEY (rowid=?)";
const EDGES_OF_DEP: &str = "SEARCH task_edges USING PRIMARY KEY (dep_id=?)";
const TENANT_BY_ID: &str = "SEARCH tenants USING INTEGER PRIMARY KEY (rowid=?)";
/// Steps that read a statement's own rows, not a table: a recursive walk's.
const CTES: &[&str] = &["SCAN CONSTANT ROW", "SCAN lanes"];

const HOT: &[Hot] = &[
    // Submission.
    Hot {
        name: "submit: a tenant's rules",
        sql: super::tenants::RULES_SQL,
        plan: &[TENANT_BY_ID],
    },
    Hot {
        name: "submit: the batch",
        sql: super::tasks::BATCH_SQL,
        plan: &[BATCH_BY_ID],
    },
    Hot {
        name: "submit: a tenant's open limit",
        sql: super::tenants::LIMIT_SQL,
        plan: &[TENANT_BY_ID],
    },
    Hot {
        name: "submit: a tenant's open tasks",
        sql: super::tenants::OPEN_SQL,
        plan: &["SEARCH batch_orders USING INDEX batch_orders_tenant (tenant_id=?)"],
    },
    Hot {
        name: "submit: the gate",
        sql: gate::CURRENT_SQL,
        plan: &["SEARCH batch_orders USING PRIMARY KEY (batch_id=?)"],
    },
    Hot {
        name: "submit: an order counted",
        sql: include_str!("sql/submit_order.sql"),
        plan: &[],
    },
    // The claim.
    Hot {
        name: "claim: the scan",
        sql: claim::CANDIDATES_SQL,
        plan: &[
            "SCAN t USING INDEX tasks_ready",
            "SEARCH b USING INTEGER PRIMARY KEY (rowid=?)",
            "SEARCH g USING PRIMARY KEY (key=?)",
            TENANT_OF_BATCH,
        ],
    },
    Hot {
        name: "claim: ungrouped tasks behind the scan",
        sql: claim::FREE_BEYOND_SQL,
        plan: &[
            "SEARCH t USING INDEX tasks_ready_free",
            "SEARCH b USING INTEGER PRIMARY KEY (rowid=?)",
            TENANT_OF_BATCH,
        ],
    },
    Hot {
        name: "claim: a group's tasks behind the scan",
        sql: claim::GROUP_BEYOND_SQL,
        plan: &[
            "SEARCH t USING INDEX tasks_ready_group (group_key=?",
            "SEARCH b USING INTEGER PRIMARY KEY (rowid=?)",
            TENANT_OF_BATCH,
        ],
    },
    Hot {
        name: "claim: the tenants with ready work, for the fair share",
        sql: super::share::LANES_SQL,
        plan: &[
            "SEARCH tasks USING COVERING INDEX tasks_lanes (tenant_id>?)",
            "SEARCH n USING INTEGER PRIMARY KEY (rowid=?)",
            "USING COVERING INDEX tasks_lanes (tenant_id=? AND not_before<?)",
        ],
    },
    Hot {
        name: "claim: the next group with ready tasks, from",
        sql: claim::READY_GROUP_FROM_SQL,
        plan: &["SEARCH tasks USING COVERING INDEX tasks_ready_group (group_key>?)"],
    },
    Hot {
        name: "claim: the next group with ready tasks, after",
        sql: claim::READY_GROUP_AFTER_SQL,
        plan: &["SEARCH tasks USING COVERING INDEX tasks_ready_group (group_key>?)"],
    },
    Hot {
        name: "claim: the next group with room",
        sql: claim::OPEN_GROUP_FROM_SQL,
        plan: &["SEARCH groups USING INDEX groups_open (key>?)"],
    },
    Hot {
        name: "claim: the next delayed task due",
        sql: claim::NEXT_DUE_SQL,
        plan: &["SEARCH tasks USING COVERING INDEX tasks_delayed (not_before>?)"],
    },
    Hot {
        name: "claim: the next token of a group with a rate",
        sql: claim::NEXT_RATE_SQL,
        plan: &[
            "g USING INDEX groups_rated",
            "USING COVERING INDEX tasks_ready_group (group_key=?)",
        ],
    },
    Hot {
        name: "claim: the end of the next hold of a group",
        sql: claim::NEXT_HOLD_SQL,
        plan: &[
            "g USING INDEX groups_hold_ends (held_until>?)",
            "USING COVERING INDEX tasks_ready_group (group_key=?)",
        ],
    },
    Hot {
        name: "claim: the end of the next hold of a tenant",
        sql: claim::NEXT_TENANT_HOLD_SQL,
        plan: &["tenants USING COVERING INDEX tenants_hold_ends (held_until>?)"],
    },
    Hot {
        name: "claim: a task taken",
        sql: claim::TAKE_SQL,
        plan: &[TASK_BY_ID],
    },
    Hot {
        name: "claim: a batch's running count",
        sql: claim::BATCH_TAKE_SQL,
        plan: &[BATCH_BY_ID],
    },
    Hot {
        name: "claim: a group's running count",
        sql: claim::GROUP_TAKE_SQL,
        plan: &[GROUP_BY_KEY],
    },
    Hot {
        name: "claim: a tenant's running count",
        sql: claim::TENANT_TAKE_SQL,
        plan: &[TENANT_BY_ID],
    },
    // Start, completion, hand-back, leases.
    Hot {
        name: "start mark",
        sql: complete::START_SQL,
        plan: &[TASK_BY_ID],
    },
    Hot {
        name: "complete: a success",
        sql: include_str!("sql/complete_succeeded.sql"),
        plan: &[TASK_BY_ID],
    },
    Hot {
        name: "complete: a claimed task read",
        sql: include_str!("sql/running_get.sql"),
        plan: &[TASK_BY_ID],
    },
    Hot {
        name: "complete: an end",
        sql: include_str!("sql/complete_ended.sql"),
        plan: &[TASK_BY_ID],
    },
    Hot {
        name: "complete: a retry",
        sql: include_str!("sql/complete_retry.sql"),
        plan: &[TASK_BY_ID, ORDERS_OF_BATCH],
    },
    Hot {
        name: "complete: a batch's running count",
        sql: complete::BATCH_FREE_SQL,
        plan: &[BATCH_BY_ID],
    },
    Hot {
        name: "complete: a group's running count",
        sql: complete::GROUP_FREE_SQL,
        plan: &[GROUP_BY_KEY],
    },
    Hot {
        name: "complete: a tenant's running count",
        sql: complete::TENANT_FREE_SQL,
        plan: &[TENANT_BY_ID],
    },
    Hot {
        name: "complete: an order closed",
        sql: gate::CLOSE_SQL,
        plan: &[ORDER_BY_KEY],
    },
    Hot {
        name: "complete: an order dropped",
        sql: gate::DROP_SQL,
        plan: &[ORDER_BY_KEY],
    },
    Hot {
        name: "complete: the next order promoted",
        sql: gate::MOVE_SQL,
        plan: &["SEARCH tasks USING INDEX tasks_batch (batch_id=? AND ord=?)"],
    },
    Hot {
        name: "complete: a dependency's dependents",
        sql: graph::DEPENDENTS_SQL,
        plan: &[EDGES_OF_DEP],
    },
    Hot {
        name: "complete: a dependent counted down",
        sql: graph::COUNT_DOWN_SQL,
        plan: &[TASK_BY_ID],
    },
    Hot {
        name: "complete: a dependent made ready",
        sql: graph::READY_SQL,
        plan: &[TASK_BY_ID],
    },
    Hot {
        name: "complete: a dependency's dependents counted down",
        sql: graph::COUNT_DOWN_ALL_SQL,
        plan: &[TASK_BY_ID, EDGES_OF_DEP],
    },
    Hot {
        name: "complete: a dependency's dependents made ready",
        sql: graph::READY_ALL_SQL,
        plan: &[TASK_BY_ID, EDGES_OF_DEP],
    },
    Hot {
        name: "hand back",
        sql: include_str!("sql/hand_back.sql"),
        plan: &[TASK_BY_ID, ORDERS_OF_BATCH],
    },
    Hot {
        name: "lease renewal",
        sql: complete::RENEW_SQL,
        plan: &["SEARCH tasks USING INDEX tasks_running (lease_node=?)"],
    },
    Hot {
        name: "lease renewal: cancellations asked",
        sql: complete::CANCEL_ASKED_SQL,
        plan: &["SEARCH tasks USING INDEX tasks_running (lease_node=?)"],
    },
    Hot {
        name: "rescue: leases lost",
        sql: include_str!("sql/running_lost.sql"),
        plan: &["SCAN tasks USING INDEX tasks_running"],
    },
];

/// The plan of `sql` as `EXPLAIN QUERY PLAN` details, one line per step.
fn plan(conn: &Connection, sql: &str) -> Vec<String> {
    let mut stmt = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap_or_else(|e| panic!("planning {sql}: {e}"));
    // Parameters left unbound: plans do not depend on their values (see schema.rs).
    let mut rows = stmt.raw_query();
    let mut steps = Vec::new();
    while let Some(row) = rows.next().unwrap() {
        steps.push(row.get::<_, String>(3).unwrap());
    }
    steps
}

/// Every hot statement's plan: its fragments, no sort, no scan of a whole table.
fn check_plans(conn: &Connection, when: &str) {
    let mut wrong = Vec::new();
    for hot in HOT {
        let steps = plan(conn, hot.sql);
        let missing: Vec<&str> = hot
            .plan
            .iter()
            .copied()
            .filter(|fragment| !steps.iter().any(|step| step.contains(fragment)))
            .collect();
        let bad: Vec<&String> = steps
            .iter()
            .filter(|step| {
                step.contains("TEMP B-TREE")
                    || (step.starts_with("SCAN ")
                        && !step.contains(" USING ")
                        && !step.contains("VIRTUAL TABLE")
                        && !CTES.contains(&step.as_str()))
            })
            .collect();
        if !missing.is_empty() || !bad.is_empty() {
            wrong.push(format!(
                "{}: plan {steps:?}, missing {missing:?}, forbidden {bad:?}",
                hot.name
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "hot statements planned wrong {when}:\n{}",
        wrong.join("\n")
    );
}

/// A store filled as `qhost bench fill` fills it (ended, ready, claimed, paused and
/// waiting tasks over many batches and 200 groups), with 5,000 ready tasks more over
/// 1,000 groups, some delayed.
fn filled_store(dir: &std::path::Path) -> Connection {
    let path = dir.join("plans.db");
    let now = now_micros();
    crate::cli::bench_fill::fill_sqlite(path.to_str().unwrap(), 20_000, now).unwrap();
    let conn = super::SqliteStore::connect(&path).unwrap();
    conn.execute_batch(&format!(
        "WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 4999)
         INSERT INTO tasks (batch_id, module, input, ord, group_key, priority, vseq, state,
             listed, max_attempts, backoff_ms, limits, mounts, not_before, submitted_at)
         SELECT 10, (SELECT digest FROM modules), x'', 1, 'h' || (i % 1000), i % 3, 5000 + i,
             1, 1, 3, 1000, '{{}}', '[]', CASE WHEN i % 10 = 0 THEN {now} + 60000000 ELSE 0 END,
             {now}
         FROM s;
         INSERT OR IGNORE INTO groups (key) SELECT DISTINCT group_key FROM tasks
         WHERE group_key IS NOT NULL;"
    ))
    .unwrap();
    conn
}

#[test]
fn every_hot_statement_uses_its_index_whatever_other_indexes_there_are() {
    let dir = tempfile::tempdir().unwrap();
    let conn = filled_store(dir.path());
    check_plans(&conn, "without ANALYZE");
    conn.execute_batch("ANALYZE").unwrap();
    check_plans(&conn, "after ANALYZE");
    // The list indexes as they once were, which took the claim's plans over, on a store
    // without statistics (they are read when the store opens).
    conn.execute_batch(
        "CREATE INDEX thief_state ON tasks (state, submitted_at);
         CREATE INDEX thief_batch ON tasks (batch_id, state, submitted_at);
         CREATE INDEX thief_group ON tasks (group_key, state, submitted_at);
         DELETE FROM sqlite_stat1;
         DELETE FROM sqlite_stat4;",
    )
    .unwrap();
    drop(conn);
    let conn = super::SqliteStore::connect(&dir.path().join("plans.db")).unwrap();
    check_plans(
        &conn,
        "with indexes that lead with the state, without ANALYZE",
    );
    conn.execute_batch("ANALYZE").unwrap();
    check_plans(
        &conn,
        "with indexes that lead with the state, after ANALYZE",
    );
}

/// Every statement a claim may run.
const CLAIM_STATEMENTS: [&str; 18] = [
    super::share::LANES_SQL,
    super::share::CLOCK_SQL,
    super::share::CLOCK_SET_SQL,
    claim::CANDIDATES_SQL,
    claim::FREE_BEYOND_SQL,
    claim::GROUP_BEYOND_SQL,
    claim::READY_GROUP_FROM_SQL,
    claim::READY_GROUP_AFTER_SQL,
    claim::OPEN_GROUP_FROM_SQL,
    claim::NEXT_DUE_SQL,
    claim::NEXT_RATE_SQL,
    claim::NEXT_HOLD_SQL,
    claim::NEXT_TENANT_HOLD_SQL,
    claim::TAKE_SQL,
    claim::BATCH_TAKE_SQL,
    claim::GROUP_TAKE_SQL,
    claim::TENANT_TAKE_SQL,
    claim::VTIME_SQL,
];

/// Runs `f` and counts the VM steps the claim's statements took in it (SQLite's own
/// statement counters).
fn vm_steps<T>(conn: &mut Connection, f: impl FnOnce(&mut Connection) -> T) -> (T, i64) {
    for sql in CLAIM_STATEMENTS {
        conn.prepare_cached(sql)
            .unwrap()
            .reset_status(StatementStatus::VmStep);
    }
    let value = f(conn);
    let steps = CLAIM_STATEMENTS
        .iter()
        .map(|sql| {
            let stmt = conn.prepare_cached(sql).unwrap();
            i64::from(stmt.get_status(StatementStatus::VmStep))
        })
        .sum();
    (value, steps)
}

/// A store with `tasks` ready tasks, the `i`th in group `g{i % 1000}` (all in no group
/// when `grouped` is false), 1,000 groups of limit 1, and the first `busy` groups in
/// claim order made full by a claim; the tasks are the admin's, or in as many batches of
/// as many `tenants`, one each.
fn queue(
    dir: &std::path::Path,
    tasks: usize,
    grouped: bool,
    busy: usize,
    tenants: usize,
) -> Connection {
    let path = dir.join(format!("queue-{tasks}-{grouped}-{tenants}.db"));
    let mut conn = super::SqliteStore::connect(&path).unwrap();
    let tx = conn.transaction().unwrap();
    tx.execute(
        "INSERT INTO modules (digest, name, tag, size, bytes, added_at)
         VALUES (?1, 'echo', NULL, 0, x'', 0)",
        [Digest([7; 32]).to_hex()],
    )
    .unwrap();
    for batch in 1..=tenants.max(1) {
        let tenant = (tenants > 0).then_some(batch);
        if let Some(tenant) = tenant {
            tx.execute(
                "INSERT INTO tenants (id, name, created_at) VALUES (?1, 't' || ?1, 0)",
                [tenant],
            )
            .unwrap();
        }
        tx.execute(
            "INSERT INTO batches (handle_hash, priority, halt_on_failure, created_at, tenant_id)
             VALUES (?1, 0, 0, 0, ?2)",
            rusqlite::params![vec![batch as u8], tenant],
        )
        .unwrap();
        let specs = (0..tasks / tenants.max(1))
            .map(|i| TaskSpec {
                group: grouped.then(|| format!("g{}", i % 1000)),
                ..TaskSpec::new(Digest([7; 32]), Vec::new())
            })
            .collect();
        super::tasks::submit(&tx, batch as i64, specs, None, 1).unwrap();
    }
    tx.commit().unwrap();
    if busy > 0 {
        claim_now(&mut conn, busy);
    }
    conn
}

fn claim_now(conn: &mut Connection, max: usize) -> usize {
    let tx = conn.transaction().unwrap();
    let params = ClaimParams {
        node: "plans".into(),
        max,
        now: 10,
        lease: std::time::Duration::from_secs(30),
    };
    let claimed = claim::claim(&tx, &params).unwrap();
    tx.commit().unwrap();
    claimed.tasks.len()
}

/// The VM steps of one claim of 8 tasks.
fn claim_steps(
    dir: &std::path::Path,
    tasks: usize,
    grouped: bool,
    busy: usize,
    tenants: usize,
) -> i64 {
    let mut conn = queue(dir, tasks, grouped, busy, tenants);
    let (took, steps) = vm_steps(&mut conn, |conn| claim_now(conn, 8));
    assert_eq!(took, 8, "the claim takes 8 of {tasks} tasks");
    steps
}

#[test]
fn a_claims_work_does_not_grow_with_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    for (what, grouped, busy, tenants) in [
        ("no groups", false, 0, 0),
        ("1,000 groups of limit 1, 900 of them full", true, 900, 0),
        ("3 tenants sharing the slots", false, 0, 3),
    ] {
        let small = claim_steps(dir.path(), 2_000, grouped, busy, tenants);
        let large = claim_steps(dir.path(), 50_000, grouped, busy, tenants);
        // Read by the benchmark suite (benches/targets.toml).
        println!(
            "figure: claim-work-growth-sqlite ({what}) = {} x",
            large as f64 / small as f64
        );
        assert!(
            large as f64 <= small as f64 * 1.5,
            "{what}: a claim of 8 took {small} VM steps at 2,000 queued tasks, {large} at 50,000"
        );
    }
}
