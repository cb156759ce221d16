//! Liveness end to end: real `qhost serve` processes, on SQLite or on PostgreSQL shared by
//! two nodes, judged from the execution log. Not only that no rule is broken, but that the
//! scheduler does the right thing at once: no slot idles while work waits, a raised
//! priority decides the next start, tasks of one priority start in submission order, and
//! work freed by a group starts at once on whichever node has a free slot.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

use qhost::runtime::Outcome;
use qhost::scheduler::rules::{Span, peak_overlap};
use qhost::store::AttemptRecord;
use qhost_tests::pg::TestDb;
use qhost_tests::serve_node::ServeNode;
use serde_json::{Value, json};

/// How long any one test may wait for its work to end, even when the scheduler is broken.
const PATIENCE: Duration = Duration::from_secs(60);

/// Tests that judge how soon things start run one at a time: run together, their servers
/// would compete for the machine's cores and delay each other's starts.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A node named `name` with `workers` slots, on PostgreSQL at `db` or, with none, on SQLite
/// in its data directory; returns once it listens.
fn start(data: &Path, name: &str, workers: usize, db: Option<&str>) -> ServeNode {
    ServeNode::start(data, name, workers, |command| {
        if let Some(db) = db {
            command.args(["--db", db]);
        }
    })
}

/// Polls the running-now view until `task` has started in a slot (no event says so).
fn wait_started(node: &ServeNode, task: i64) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let running = node.call("GET", "/v1/running", None);
        let started = running
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["task"] == task && !r["slot"].is_null());
        if started {
            return;
        }
        if Instant::now() >= deadline {
            // What the server says of the task, to tell a claim that never came from runs
            // that ended before a poll saw them.
            let info = node.call("GET", &format!("/v1/tasks/{task}"), None);
            let attempts = node.call("GET", &format!("/v1/attempts?task={task}"), None);
            panic!(
                "task {task} did not start within {PATIENCE:?}: running {running}; the task \
                 {info}; its attempts {attempts}"
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The log of the tasks `ids` (in submission order), one attempt each, all succeeded,
/// sorted by start.
fn ran_once(log: Vec<AttemptRecord>, ids: &[i64]) -> Vec<AttemptRecord> {
    let mut log: Vec<AttemptRecord> = log.into_iter().filter(|a| ids.contains(&a.task)).collect();
    log.sort_by_key(|a| (a.started_at, a.task));
    let positions = positions(ids);
    let tasks: HashSet<i64> = log.iter().map(|a| a.task).collect();
    assert!(
        log.len() == ids.len()
            && tasks.len() == ids.len()
            && log.iter().all(|a| a.outcome == Outcome::Succeeded),
        "each of the {} tasks should have run once and succeeded:\n{}",
        ids.len(),
        timeline(&log, &positions)
    );
    log
}

/// Task id -> 1-based submission position.
fn positions(ids: &[i64]) -> HashMap<i64, usize> {
    ids.iter().enumerate().map(|(i, &id)| (id, i + 1)).collect()
}

/// The log as a table a reader can follow: submission position, task, group, node, slot,
/// start and end in milliseconds after the first start.
fn timeline(log: &[AttemptRecord], positions: &HashMap<i64, usize>) -> String {
    let origin = log.iter().map(|a| a.started_at).min().unwrap_or(0);
    let ms = |t: i64| (t - origin) as f64 / 1000.0;
    let mut text = String::from(
        "  pos  task  group  node  slot     start       end  (ms after the first start)\n",
    );
    for a in log {
        text.push_str(&format!(
            "  {:>3}  {:>4}  {:>5}  {:>4}  {:>4}  {:>8.1}  {:>8.1}\n",
            positions.get(&a.task).copied().unwrap_or(0),
            a.task,
            a.group.as_deref().unwrap_or("-"),
            a.node,
            a.slot.map_or("-".to_owned(), |s| s.to_string()),
            ms(a.started_at),
            ms(a.ended_at),
        ));
    }
    text
}

/// Submission positions in start order.
fn start_order(log: &[AttemptRecord], positions: &HashMap<i64, usize>) -> Vec<usize> {
    log.iter().map(|a| positions[&a.task]).collect()
}

/// Two nodes of six slots, `n1` and `n2`, on the PostgreSQL database `db`, both in its
/// node registry, each with the `sleep` guest compiled.
fn two_nodes(db: &str, data: &Path) -> Vec<ServeNode> {
    let nodes: Vec<ServeNode> = ["n1", "n2"]
        .iter()
        .map(|name| start(data, name, 6, Some(db)))
        .collect();
    let registry = nodes[0].call("GET", "/v1/nodes", None);
    let mut registered: Vec<&str> = registry
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["node"].as_str())
        .collect();
    registered.sort_unstable();
    assert_eq!(registered, ["n1", "n2"], "both nodes are up: {registry}");
    for node in &nodes {
        node.upload("sleep");
    }
    nodes
}

/// No slot idles while work waits, across nodes: two nodes of six slots on one PostgreSQL
/// database run twelve long tasks of one batch in one wave, six on each node, though all
/// twelve were submitted through the first.
#[test]
fn long_tasks_fill_every_slot_of_every_node_at_once() {
    let _serial = one_at_a_time();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDb::new());
    let data = tempfile::tempdir().unwrap();
    let nodes = two_nodes(&db.url, data.path());

    let tasks = (0..12)
        .map(|_| json!({"module": "sleep", "input": "800"}))
        .collect();
    let (batch, ids) = nodes[0].submit_batch(tasks);
    nodes[1].wait(batch, PATIENCE);

    let log = ran_once(nodes[1].log(), &ids);
    let positions = positions(&ids);
    let spans: Vec<Span> = log.iter().map(Span::from).collect();
    let peak = peak_overlap(&spans);
    let first_end = log.iter().map(|a| a.ended_at).min().unwrap();
    let second_wave: Vec<usize> = log
        .iter()
        .filter(|a| a.started_at >= first_end)
        .map(|a| positions[&a.task])
        .collect();
    let on = |node: &str| log.iter().filter(|a| a.node == node).count();
    assert!(
        peak == 12 && second_wave.is_empty() && on("n1") == 6 && on("n2") == 6,
        "12 tasks of 800 ms on two nodes of 6 slots should run in one wave, 6 on each node; \
         at most {peak} ran at once, {} on n1 and {} on n2, and positions {second_wave:?} \
         started only after another task had ended:\n{}",
        on("n1"),
        on("n2"),
        timeline(&log, &positions)
    );
}

/// Tasks submitted alone (a batch each) to a node of one slot: the first sleeps 2 s, the
/// others 100 ms. While the first runs, every fifth task is raised to its position as
/// priority, with its own handle.
fn raised_priorities_decide_the_next_starts(db: Option<&str>) {
    const TASKS: usize = 30;
    const EVERY: usize = 5;
    let data = tempfile::tempdir().unwrap();
    let node = start(data.path(), "n1", 1, db);
    node.upload("sleep");

    let submitted: Vec<(i64, i64, String)> = (1..=TASKS)
        .map(|position| {
            let input = if position == 1 { "2000" } else { "100" };
            let alone = node.call(
                "POST",
                "/v1/tasks",
                Some(json!({"module": "sleep", "input": input})),
            );
            (
                alone["task"].as_i64().unwrap(),
                alone["batch"].as_i64().unwrap(),
                alone["handle"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let ids: Vec<i64> = submitted.iter().map(|(id, _, _)| *id).collect();
    let first = ids[0];

    wait_started(&node, first);
    let raised: Vec<usize> = (EVERY..=TASKS).step_by(EVERY).collect();
    for &position in &raised {
        let (task, _, handle) = &submitted[position - 1];
        node.call_as(
            handle,
            "PUT",
            &format!("/v1/tasks/{task}/priority"),
            Some(json!({"priority": position})),
        );
    }
    let ended_so_far = node.call("GET", &format!("/v1/attempts?task={first}"), None);
    assert_eq!(
        ended_so_far["attempts"].as_array().unwrap().len(),
        0,
        "the first task ended before every priority was raised: the test proves nothing; \
         make the first task longer"
    );

    for (_, batch, _) in &submitted {
        node.wait(*batch, PATIENCE);
    }
    let log = ran_once(node.log(), &ids);
    let positions = positions(&ids);
    let mut expected = vec![1];
    expected.extend(raised.iter().rev());
    expected.extend((2..=TASKS).filter(|p| !raised.contains(p)));
    assert_eq!(
        start_order(&log, &positions),
        expected,
        "on one slot, once the first task has ended, the raised tasks (positions {raised:?}, \
         their position as priority) should run highest first, then the rest in submission \
         order; start order (submission positions) left, expected right:\n{}",
        timeline(&log, &positions)
    );
}

/// A raised priority reaches every task that has not started, though the node claims
/// ahead of its slots: on SQLite.
#[test]
fn a_raised_priority_reaches_every_task_not_started() {
    let _serial = one_at_a_time();
    raised_priorities_decide_the_next_starts(None);
}

/// A raised priority reaches every task that has not started: on PostgreSQL.
#[test]
fn a_raised_priority_reaches_every_task_not_started_on_postgres() {
    let _serial = one_at_a_time();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDb::new());
    raised_priorities_decide_the_next_starts(Some(&db.url));
}

/// Twelve tasks of one batch, in submission order; the odd positions (1-based) in group
/// `g{position % 4}` (limit 1), so groups g1 (1, 5, 9) and g3 (3, 7, 11) hold back their
/// later tasks while the even positions are free to run.
fn grouped_batch(millis: u64) -> Vec<Value> {
    (1..=12)
        .map(|position| {
            let mut task = json!({"module": "sleep", "input": millis.to_string()});
            if position % 2 == 1 {
                task["group"] = json!(format!("g{}", position % 4));
            }
            task
        })
        .collect()
}

/// Starts this close together are one decision of the scheduler, in any order: the runs
/// of one claim begin as their slots are handed out.
const SAME_INSTANT: i64 = 50_000;

/// Where a task started before one submitted earlier that nothing held back (all of one
/// priority, submitted at once, in groups of limit 1): for each start `s`, every task `u`
/// submitted earlier must have started by then (or within [`SAME_INSTANT`] after), unless
/// its group was taken at that moment: by a task other than `s` running then, or by one
/// submitted before `u` starting at the same instant.
fn overtakings(log: &[AttemptRecord], positions: &HashMap<i64, usize>) -> Vec<String> {
    let position = |a: &AttemptRecord| positions[&a.task];
    let mut found = Vec::new();
    for s in log {
        let at = s.started_at;
        for u in log {
            if position(u) >= position(s) || u.started_at <= at + SAME_INSTANT {
                continue;
            }
            let group_taken = u.group.is_some()
                && log.iter().any(|v| {
                    v.group == u.group
                        && v.task != u.task
                        && v.task != s.task
                        && ((v.started_at <= at && at < v.ended_at)
                            || (position(v) < position(u)
                                && at < v.started_at
                                && v.started_at <= at + SAME_INSTANT))
                });
            if !group_taken {
                found.push(format!(
                    "position {} started {:.1} ms after position {}, submitted later, though \
                     {}",
                    position(u),
                    (u.started_at - at) as f64 / 1000.0,
                    position(s),
                    match &u.group {
                        Some(group) => format!("its group {group} was free"),
                        None => "it has no group".to_owned(),
                    }
                ));
            }
        }
    }
    found
}

/// FIFO within a priority over several waves, on one node of six slots: the first wave is
/// the first six claimable tasks in submission order, and no task ever starts before a
/// claimable task submitted earlier.
fn one_priority_starts_in_submission_order(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let node = start(data.path(), "n1", 6, db);
    node.upload("sleep");
    let (batch, ids) = node.submit_batch(grouped_batch(300));
    node.wait(batch, PATIENCE);

    let log = ran_once(node.log(), &ids);
    let positions = positions(&ids);
    let mut first_wave = start_order(&log[..6], &positions);
    first_wave.sort_unstable();
    let overtaken = overtakings(&log, &positions);
    assert!(
        first_wave == [1, 2, 3, 4, 6, 8] && overtaken.is_empty(),
        "the first wave should be the first six claimable tasks, positions [1, 2, 3, 4, 6, \
         8], and it was {first_wave:?}; no task should start before a claimable one \
         submitted earlier:\n  {}\n{}",
        overtaken.join("\n  "),
        timeline(&log, &positions)
    );
}

/// Tasks of one priority start in submission order: on SQLite.
#[test]
fn tasks_of_one_priority_start_in_submission_order() {
    let _serial = one_at_a_time();
    one_priority_starts_in_submission_order(None);
}

/// Tasks of one priority start in submission order: on PostgreSQL.
#[test]
fn tasks_of_one_priority_start_in_submission_order_on_postgres() {
    let _serial = one_at_a_time();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDb::new());
    one_priority_starts_in_submission_order(Some(&db.url));
}

/// How soon a task must start once it has become claimable, when a slot is free somewhere.
/// Nothing polls: a lost wake-up leaves the task to the next event, the end of an 800 ms
/// task at the soonest. A quarter of that tells the two apart with room for a loaded
/// machine, where writing one end and claiming after it has taken 61 ms.
const AT_ONCE: i64 = 200_000;

/// Tasks that did not start within [`AT_ONCE`] of the moment they became claimable: the
/// batch's first start for a task nothing held back, the end of its group's task before it
/// for one its group held back. Only for a log where slots never ran short.
fn late_starts(log: &[AttemptRecord], positions: &HashMap<i64, usize>) -> Vec<String> {
    let origin = log.iter().map(|a| a.started_at).min().unwrap_or(0);
    let mut late = Vec::new();
    for a in log {
        let before = log
            .iter()
            .filter(|b| b.group.is_some() && b.group == a.group && b.started_at < a.started_at)
            .max_by_key(|b| b.started_at);
        let (claimable_at, since) = match before {
            Some(b) => (
                b.ended_at,
                format!(
                    "position {} of its group ended on {}",
                    positions[&b.task], b.node
                ),
            ),
            None => (origin, "the batch's first start".to_owned()),
        };
        let wait = a.started_at - claimable_at;
        if wait > AT_ONCE {
            late.push(format!(
                "position {} started on {} {:.1} ms after {since}",
                positions[&a.task],
                a.node,
                wait as f64 / 1000.0,
            ));
        }
    }
    late
}

/// Freed work starts at once on whichever node is idle: two nodes of six slots on one
/// PostgreSQL database, the grouped batch of 800 ms tasks submitted through the first.
/// Twelve slots for at most eight claimable tasks, so no task ever has to wait for a slot:
/// each starts within [`AT_ONCE`] of becoming claimable, at the batch's start or when the end of
/// its group's task before it frees the group. Three rounds, each on a fresh database:
/// which node claims first is a race, and one round may be lucky.
#[test]
fn freed_work_starts_at_once_on_whichever_node_is_idle() {
    let _serial = one_at_a_time();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for round in 1..=3 {
        let db = runtime.block_on(TestDb::new());
        let data = tempfile::tempdir().unwrap();
        let nodes = two_nodes(&db.url, data.path());
        let (batch, ids) = nodes[0].submit_batch(grouped_batch(800));
        nodes[1].wait(batch, PATIENCE);

        let log = ran_once(nodes[1].log(), &ids);
        let positions = positions(&ids);
        let late = late_starts(&log, &positions);
        assert!(
            late.is_empty(),
            "round {round}: with a slot free on some node, every task should start within {} \
             ms of becoming claimable:\n  {}\n{}",
            AT_ONCE / 1000,
            late.join("\n  "),
            timeline(&log, &positions)
        );
    }
}

/// An attempt of task `task` (its id is its submission position) from `start` to `end`
/// milliseconds, for the checkers' own test.
fn attempt(task: i64, group: Option<&str>, start: i64, end: i64) -> AttemptRecord {
    AttemptRecord {
        task,
        batch: 1,
        module: qhost::runtime::Digest([0; 32]),
        module_name: None,
        attempt: 1,
        node: "n1".to_owned(),
        slot: Some(0),
        group: group.map(str::to_owned),
        order: 0,
        started_at: start * 1000,
        ended_at: end * 1000,
        cpu_micros: None,
        memory_mib_seconds: None,
        http_bytes: None,
        outcome: Outcome::Succeeded,
        error: None,
        logs: Vec::new(),
        stdout: Vec::new(),
        stderr: Vec::new(),
        cut: Vec::new(),
    }
}

/// The checkers pass the log the rules give for the grouped batch on six slots, and
/// catch what went wrong: an overtaking within the batch, within a group, a late start.
#[test]
fn the_checkers_tell_a_right_log_from_a_wrong_one() {
    let group = |p: i64| (p % 2 == 1).then(|| ["g1", "g3"][(p % 4 / 2) as usize]);
    let log = |waves: &[(i64, i64)]| -> Vec<AttemptRecord> {
        waves
            .iter()
            .map(|&(p, start)| attempt(p, group(p), start, start + 300))
            .collect()
    };
    let positions: HashMap<i64, usize> = (1..=12).map(|p| (p, p as usize)).collect();
    // Six slots: 10 and 12 wait for the first wave to end.
    let right = log(&[
        (1, 0),
        (2, 0),
        (3, 1),
        (4, 1),
        (6, 1),
        (8, 2),
        (5, 305),
        (7, 304),
        (10, 303),
        (12, 303),
        (9, 610),
        (11, 609),
    ]);
    assert_eq!(overtakings(&right, &positions), Vec::<String>::new());
    // Twelve slots: only the groups hold tasks back.
    let right = log(&[
        (1, 0),
        (2, 0),
        (3, 1),
        (4, 1),
        (6, 1),
        (8, 2),
        (10, 2),
        (12, 3),
        (5, 305),
        (7, 304),
        (9, 610),
        (11, 609),
    ]);
    assert_eq!(overtakings(&right, &positions), Vec::<String>::new());
    assert_eq!(late_starts(&right, &positions), Vec::<String>::new());

    // Task 12 took the slot of 8, which ran in the next wave.
    let overtaken = log(&[
        (12, 0),
        (1, 0),
        (2, 0),
        (3, 1),
        (4, 1),
        (6, 1),
        (8, 302),
        (10, 302),
        (5, 303),
        (7, 303),
        (9, 606),
        (11, 606),
    ]);
    let found = overtakings(&overtaken, &positions);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("position 8 started 302.0 ms after position 12"));
    assert_eq!(late_starts(&overtaken, &positions).len(), 2);

    // Within g1, task 9 ran before 5.
    let unfair = log(&[
        (1, 0),
        (2, 0),
        (3, 1),
        (4, 1),
        (6, 1),
        (8, 2),
        (9, 305),
        (7, 304),
        (10, 303),
        (12, 303),
        (5, 610),
        (11, 609),
    ]);
    let found = overtakings(&unfair, &positions);
    assert!(
        found.iter().all(|f| f.starts_with("position 5 "))
            && found
                .iter()
                .any(|f| f.contains("305.0 ms after position 9")),
        "{found:?}"
    );

    // Task 5 waited 300 ms after its group was freed.
    let slow = log(&[
        (1, 0),
        (2, 0),
        (3, 1),
        (4, 1),
        (6, 1),
        (8, 2),
        (10, 2),
        (12, 3),
        (5, 600),
        (7, 304),
        (9, 905),
        (11, 609),
    ]);
    let found = late_starts(&slow, &positions);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("position 5 started on n1 300.0 ms after position 1"));
}
