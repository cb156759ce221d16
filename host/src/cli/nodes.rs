//! `qhost nodes`: the nodes sharing the store, with their heartbeats, clock offsets and
//! slots, as a table or JSON.

use std::process::ExitCode;

use clap::Args;

use super::client::{Client, ConnectArgs, age, duration, print_json, print_table};
use crate::store::NodeInfo;

#[derive(Debug, Args)]
pub struct NodesArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Print them as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: NodesArgs) -> anyhow::Result<ExitCode> {
    let client = Client::new(&args.connect)?;
    let nodes: Vec<NodeInfo> = client.get("/v1/nodes")?;
    if args.json {
        print_json(&nodes)?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = nodes
        .iter()
        .map(|n| {
            // The store's clock minus the node's: positive when the node's runs behind.
            let offset = if n.clock_offset < 0 {
                format!("-{}", duration(-n.clock_offset))
            } else {
                duration(n.clock_offset)
            };
            vec![
                n.node.clone(),
                format!("{} ago", age(n.heartbeat_at)),
                offset,
                format!("{}/{}", n.busy, n.workers),
                age(n.started_at),
            ]
        })
        .collect();
    print_table(
        &["NODE", "HEARTBEAT", "CLOCK OFFSET", "SLOTS BUSY", "UP"],
        &rows,
    )?;
    Ok(ExitCode::SUCCESS)
}
