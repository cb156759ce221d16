//! `qhost status`: the queue at a glance (tasks per state, ended totals, the oldest ready
//! task, nodes and their slots, busy groups, the deepest batches) and what runs now, on
//! which node and slot.

use std::process::ExitCode;

use clap::Args;

use super::client::{Client, ConnectArgs, age, duration, print_json, print_table};
use crate::api::status::Status;
use crate::store::RunningTask;

/// How many running tasks the table lists; `--json` lists them all.
const SHOWN_RUNNING: usize = 20;

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Print it as JSON: the status with every running task under `running`.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: StatusArgs) -> anyhow::Result<ExitCode> {
    let client = Client::new(&args.connect)?;
    if args.json {
        let mut status: serde_json::Value = client.get("/v1/status")?;
        let running: serde_json::Value = client.get("/v1/running")?;
        if let Some(object) = status.as_object_mut() {
            object.insert("running".into(), running);
        }
        print_json(&status)?;
        return Ok(ExitCode::SUCCESS);
    }
    let status: Status = client.get("/v1/status")?;
    let running: Vec<RunningTask> = client.get("/v1/running")?;
    outln!("tasks     {}", status.tasks)?;
    let e = &status.ended_total;
    outln!(
        "ended     {} succeeded, {} failed, {} cancelled in all (pruned ones too)",
        e.succeeded,
        e.failed,
        e.cancelled
    )?;
    match status.oldest_ready_age_seconds {
        Some(seconds) => outln!(
            "oldest    ready task submitted {} ago",
            duration((seconds * 1e6) as i64)
        )?,
        None => outln!("oldest    no task ready to claim")?,
    }
    outln!()?;
    let nodes: Vec<Vec<String>> = status
        .nodes
        .iter()
        .map(|n| {
            vec![
                n.node.clone(),
                format!("{}/{}", n.busy, n.workers),
                format!("{} ago", age(n.heartbeat_at)),
            ]
        })
        .collect();
    print_table(&["NODE", "SLOTS BUSY", "HEARTBEAT"], &nodes)?;
    if !status.groups.is_empty() {
        outln!()?;
        let groups: Vec<Vec<String>> = status
            .groups
            .iter()
            .map(|g| {
                vec![
                    g.key.clone(),
                    if g.paused {
                        format!("{} (paused)", g.limit)
                    } else {
                        g.limit.to_string()
                    },
                    g.running.to_string(),
                    g.ready.to_string(),
                    match (&g.rate, g.tokens) {
                        (Some(rate), Some(tokens)) => {
                            format!("{} ({tokens} left)", super::group::shown_rate(Some(rate)))
                        }
                        _ => "-".to_owned(),
                    },
                ]
            })
            .collect();
        print_table(&["GROUP", "LIMIT", "RUNNING", "READY", "RATE"], &groups)?;
    }
    if !status.batches.is_empty() {
        outln!()?;
        let batches: Vec<Vec<String>> = status
            .batches
            .iter()
            .map(|b| {
                vec![
                    b.batch.to_string(),
                    b.name.clone().unwrap_or_else(|| "-".into()),
                    b.open.to_string(),
                    if b.paused { "paused" } else { "" }.into(),
                ]
            })
            .collect();
        print_table(&["BATCH", "NAME", "OPEN", ""], &batches)?;
    }
    outln!()?;
    if running.is_empty() {
        outln!("nothing runs on {}", client.server())?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = running
        .iter()
        .take(SHOWN_RUNNING)
        .map(|t| {
            vec![
                t.task.to_string(),
                t.batch.to_string(),
                t.node.clone(),
                t.slot.map(|s| s.to_string()).unwrap_or_else(|| "-".into()),
                t.attempt.to_string(),
                t.order.to_string(),
                t.group.clone().unwrap_or_else(|| "-".into()),
                age(t.since),
            ]
        })
        .collect();
    print_table(
        &[
            "TASK", "BATCH", "NODE", "SLOT", "ATTEMPT", "ORDER", "GROUP", "FOR",
        ],
        &rows,
    )?;
    if running.len() > SHOWN_RUNNING {
        outln!(
            "... and {} more running (`qhost status --json` lists them all)",
            running.len() - SHOWN_RUNNING
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
