//! Randomized workloads for tests through real servers: batches of `misbehave` tasks over
//! orders, groups, priorities and batch limits, and the check of every scheduling rule over
//! the execution log they leave.

use std::collections::HashMap;

use qhost::runtime::Outcome;
use qhost::scheduler::rules::{self, Span};
use qhost::store::AttemptRecord;
use serde_json::{Value, json};

use crate::Rng;
use crate::serve_node::ServeNode;

pub struct Workload {
    /// Each batch with its `max_parallel`.
    pub batches: Vec<(i64, Option<u64>)>,
    pub tasks: Vec<i64>,
    pub group_limits: HashMap<String, usize>,
}

/// Sets random limits (1 to 3) on the groups `g0`..`g2` and opens `batches` batches of
/// `misbehave` tasks (sleeps, some failing) across orders and groups, submitting through
/// the nodes in turn.
pub fn submit_workload(nodes: &[ServeNode], rng: &mut Rng, batches: usize) -> Workload {
    let mut group_limits = HashMap::new();
    for g in 0..3 {
        let limit = 1 + rng.below(3);
        nodes[g % nodes.len()].call(
            "PUT",
            &format!("/v1/groups/g{g}"),
            Some(json!({"limit": limit})),
        );
        group_limits.insert(format!("g{g}"), limit as usize);
    }
    let mut workload = Workload {
        batches: Vec::new(),
        tasks: Vec::new(),
        group_limits,
    };
    let nodes: Vec<&ServeNode> = nodes.iter().collect();
    submit_batches(&nodes, rng, batches, &mut workload);
    workload
}

/// Opens `batches` more batches of the workload's kind, submitting through the nodes in
/// turn.
pub fn submit_batches(
    nodes: &[&ServeNode],
    rng: &mut Rng,
    batches: usize,
    workload: &mut Workload,
) {
    for b in 0..batches {
        let node = &nodes[b % nodes.len()];
        let max_parallel = (rng.below(3) == 0).then(|| 1 + rng.below(2));
        let opened = node.call(
            "POST",
            "/v1/batches",
            Some(json!({"max_parallel": max_parallel})),
        );
        let batch = opened["batch"]["id"].as_i64().unwrap();
        let tasks: Vec<Value> = (0..(8 + rng.below(12)))
            .map(|_| {
                let input = match rng.below(12) {
                    0 => "error".to_string(),
                    _ => format!("sleep:{}", 5 + rng.below(40)),
                };
                let mut task = json!({
                    "module": "misbehave",
                    "input": input,
                    "order": rng.below(3),
                    "priority": rng.below(3),
                    "max_attempts": 2,
                    "backoff": "10ms",
                });
                if rng.below(2) == 0 {
                    task["group"] = json!(format!("g{}", rng.below(3)));
                }
                task
            })
            .collect();
        let submitted = node.call(
            "POST",
            &format!("/v1/batches/{batch}/tasks"),
            Some(json!({"tasks": tasks})),
        );
        workload.tasks.extend(
            submitted["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|id| id.as_i64().unwrap()),
        );
        workload.batches.push((batch, max_parallel));
    }
}

/// Every rule over the combined log (attempts recorded `lost` aside: their node died,
/// their end is when that was noticed), on `slots` slots in all; no task succeeded twice.
pub fn check_log(log: &[AttemptRecord], workload: &Workload, slots: usize, context: &str) {
    let spans: Vec<Span> = log
        .iter()
        .filter(|a| a.outcome != Outcome::Lost)
        .map(Span::from)
        .collect();
    let fail = |e: String| panic!("{context}: {e}");
    rules::check_gates(&spans).unwrap_or_else(fail);
    rules::check_group_limits(&spans, |g| workload.group_limits[g]).unwrap_or_else(fail);
    let limits: HashMap<i64, Option<usize>> = workload
        .batches
        .iter()
        .map(|&(b, m)| (b, m.map(|m| m as usize)))
        .collect();
    rules::check_batch_limits(&spans, |b| limits[&b]).unwrap_or_else(fail);
    rules::check_parallelism(&spans, slots).unwrap_or_else(fail);
    for &task in &workload.tasks {
        let succeeded = log
            .iter()
            .filter(|a| a.task == task && a.outcome == Outcome::Succeeded)
            .count();
        assert!(
            succeeded <= 1,
            "{context}: task {task} succeeded {succeeded} times"
        );
    }
}
