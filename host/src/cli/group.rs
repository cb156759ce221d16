//! `qhost group limit KEY [N]`: set or show how many tasks of a group run at once.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::json;

use super::client::{Client, ConnectArgs, print_json};
use super::module::encode;
use crate::store::GroupInfo;

#[derive(Debug, Args)]
pub struct GroupArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[command(subcommand)]
    pub command: GroupCommand,
}

#[derive(Debug, Subcommand)]
pub enum GroupCommand {
    /// Show a group's limit and counts, or set its limit when one is given.
    Limit {
        /// The group key tasks name in their `group`.
        key: String,
        /// At most this many tasks of the group run at once, across batches.
        limit: Option<u32>,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: GroupArgs) -> anyhow::Result<ExitCode> {
    let client = Client::new(&args.connect)?;
    let GroupCommand::Limit { key, limit, json } = args.command;
    let path = format!("/v1/groups/{}", encode(&key));
    let info: GroupInfo = match limit {
        Some(limit) => {
            serde_json::from_value(client.call("PUT", &path, Some(&json!({ "limit": limit })))?)?
        }
        None => client.get(&path)?,
    };
    if json {
        print_json(&info)?;
    } else {
        outln!(
            "group {}: limit {}, {} running, {} waiting",
            info.key,
            info.limit,
            info.running,
            info.waiting
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
