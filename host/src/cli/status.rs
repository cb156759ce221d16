//! `qhost status`: what runs now, on which node and slot, as a table.

use std::process::ExitCode;

use clap::Args;

use super::client::{Client, ConnectArgs, age, print_json, print_table};
use crate::store::RunningTask;

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Print it as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: StatusArgs) -> anyhow::Result<ExitCode> {
    let client = Client::new(&args.connect)?;
    let running: Vec<RunningTask> = client.get("/v1/running")?;
    if args.json {
        print_json(&running)?;
        return Ok(ExitCode::SUCCESS);
    }
    if running.is_empty() {
        outln!("nothing runs on {}", client.server())?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = running
        .iter()
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
    Ok(ExitCode::SUCCESS)
}
