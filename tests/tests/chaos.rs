//! Chaos: a randomized workload (orders, groups, batch limits, failures and retries,
//! cancellations, submissions all along) while servers are killed with SIGKILL at random
//! moments and started again: the SQLite server, and one of three PostgreSQL nodes at a
//! time. Judged over the whole execution log and every task's view at the end: each task
//! ended once and for good, nothing acknowledged is lost, no gate, group or batch limit was
//! crossed, no task succeeded twice, and each task's attempt count is what the log holds.
//!
//! The run's seed is printed; `QHOST_CHAOS_SEED=N` replays a run's choices.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use qhost::runtime::Outcome;
use qhost::store::AttemptRecord;
use qhost_tests::Rng;
use qhost_tests::pg::TestDb;
use qhost_tests::serve_node::ServeNode;
use qhost_tests::workload::{Workload, check_log, submit_batches, submit_workload};
use serde_json::Value;

/// SIGKILLs per run, at least.
const KILLS: usize = 10;
/// How long the work may take to end once the kills are over.
const PATIENCE: Duration = Duration::from_secs(180);

fn seed() -> u64 {
    std::env::var("QHOST_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        })
}

/// Asks a few random tasks of the workload to be cancelled, whatever state they are in.
fn cancel_some(node: &ServeNode, workload: &Workload, rng: &mut Rng) {
    for _ in 0..2 {
        let task = workload.tasks[rng.below(workload.tasks.len() as u64) as usize];
        node.call("POST", &format!("/v1/tasks/{task}/cancel"), None);
    }
}

/// Waits a random moment, from at once to about half a second, before the next kill.
fn pause(rng: &mut Rng) {
    std::thread::sleep(Duration::from_millis(rng.below(500)));
}

/// What the end of a chaos run must show, from the log and the task views.
fn check_the_end(node: &ServeNode, workload: &Workload, slots: usize, context: &str) {
    for &(batch, _) in &workload.batches {
        node.wait(batch, PATIENCE);
    }
    let log = node.log();
    check_log(&log, workload, slots, context);
    let mut lost = 0;
    for &task in &workload.tasks {
        let info = node.call("GET", &format!("/v1/tasks/{task}"), None);
        let state = info["state"].as_str().unwrap();
        assert!(
            ["succeeded", "failed", "cancelled"].contains(&state),
            "{context}: task {task} did not end: {info}"
        );
        let attempts: Vec<&AttemptRecord> = log.iter().filter(|a| a.task == task).collect();
        assert_eq!(
            info["attempts"].as_u64().unwrap() as usize,
            attempts.len(),
            "{context}: task {task} counts other attempts than its log has: {info}"
        );
        let successes = attempts
            .iter()
            .filter(|a| a.outcome == Outcome::Succeeded)
            .count();
        assert_eq!(
            successes,
            usize::from(state == "succeeded"),
            "{context}: task {task} is {state} with {successes} successful attempts"
        );
        lost += attempts
            .iter()
            .filter(|a| a.outcome == Outcome::Lost)
            .count();
    }
    println!(
        "{context}: {} tasks in {} batches ended; {} attempts, {lost} of them lost to kills",
        workload.tasks.len(),
        workload.batches.len(),
        log.len()
    );
}

fn sqlite_server(data: &Path) -> ServeNode {
    ServeNode::start(data, "solo", 2, |_| {})
}

#[test]
fn a_sqlite_server_killed_again_and_again_keeps_every_promise() {
    let seed = seed();
    let context = format!("sqlite chaos, seed {seed}");
    let mut rng = Rng(seed);
    let data = tempfile::tempdir().unwrap();
    let mut server = sqlite_server(data.path());
    server.upload("misbehave");
    let mut workload = submit_workload(std::slice::from_ref(&server), &mut rng, 4);
    let started = Instant::now();
    for _ in 0..KILLS {
        submit_batches(&[&server], &mut rng, 2, &mut workload);
        cancel_some(&server, &workload, &mut rng);
        pause(&mut rng);
        server.kill();
        server = sqlite_server(data.path());
    }
    println!(
        "{context}: {KILLS} kills and restarts in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    check_the_end(&server, &workload, 2, &context);
}

fn postgres_node(db: &str, data: &Path, name: &str) -> ServeNode {
    ServeNode::start(data, name, 2, |command| {
        command.args(["--lease", "3s", "--db", db]);
    })
}

#[test]
fn postgres_nodes_killed_one_at_a_time_keep_every_promise() {
    let seed = seed();
    let context = format!("postgres chaos, seed {seed}");
    let mut rng = Rng(seed);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDb::new());
    let data = tempfile::tempdir().unwrap();
    let names = ["n1", "n2", "n3"];
    let mut nodes: Vec<ServeNode> = names
        .iter()
        .map(|name| postgres_node(&db.url, data.path(), name))
        .collect();
    nodes[0].upload("misbehave");
    let mut workload = submit_workload(&nodes, &mut rng, 4);
    let started = Instant::now();
    for _ in 0..KILLS {
        let victim = rng.below(3) as usize;
        let others: Vec<&ServeNode> = (0..3).filter(|&i| i != victim).map(|i| &nodes[i]).collect();
        submit_batches(&others, &mut rng, 2, &mut workload);
        cancel_some(others[0], &workload, &mut rng);
        pause(&mut rng);
        nodes[victim].kill();
        // Back under its name, it ends its earlier life's attempts as lost at once.
        nodes[victim] = postgres_node(&db.url, data.path(), names[victim]);
    }
    println!(
        "{context}: {KILLS} kills and restarts in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    check_the_end(&nodes[0], &workload, 6, &context);
    let nodes_seen: Value = nodes[1].call("GET", "/v1/nodes", None);
    assert_eq!(
        nodes_seen.as_array().unwrap().len(),
        3,
        "{context}: {nodes_seen}"
    );
}
