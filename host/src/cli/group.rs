//! `qhost group ls`, `qhost group limit KEY [N]`, `qhost group rate KEY [5/s] [--burst N]
//! [--off]`, `qhost group pause|resume KEY`: the groups and their limits, how many tasks of
//! a group run at once, how many start per period, and holding them all for a while.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::json;

use super::client::{Client, ConnectArgs, print_json};
use super::module::encode;
use crate::api::groups::GroupListPage;
use crate::store::{GroupInfo, GroupRate, GroupRow};

#[derive(Debug, Args)]
pub struct GroupArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[command(subcommand)]
    pub command: GroupCommand,
}

#[derive(Debug, Subcommand)]
pub enum GroupCommand {
    /// List the groups with their limits, idle ones too (a batch handle: those its batch's
    /// tasks name).
    Ls {
        /// Print them as JSON, one array.
        #[arg(long)]
        json: bool,
    },
    /// Show a group's limit and counts, or set its limit when one is given.
    Limit {
        /// The group key tasks name in their `group`.
        key: String,
        /// At most this many tasks of the group run at once, across batches; 0 holds them
        /// all.
        limit: Option<u32>,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a group, or set how many of its tasks are claimed per period (its rate), or
    /// remove its rate with `--off`.
    Rate {
        /// The group key tasks name in their `group`.
        key: String,
        /// Tasks per period: `5/s`, `1000/h`, `10/30s` (units s, m, h, d, or a duration).
        #[arg(conflicts_with = "off")]
        rate: Option<String>,
        /// At most this many claimed at once after a quiet spell (default 1: spread evenly).
        #[arg(long, default_value_t = 1, requires = "rate")]
        burst: u32,
        /// Remove the group's rate.
        #[arg(long)]
        off: bool,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Hold the group's tasks that have not started, keeping its limit, until it is
    /// resumed.
    Pause {
        /// The group's key.
        key: String,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Let a paused group's tasks run again, in the order they had.
    Resume {
        /// The group's key.
        key: String,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: GroupArgs) -> anyhow::Result<ExitCode> {
    let client = Client::new(&args.connect)?;
    if let GroupCommand::Ls { json } = args.command {
        return list(&client, json);
    }
    let (info, json): (GroupInfo, bool) = match args.command {
        GroupCommand::Limit { key, limit, json } => {
            let path = format!("/v1/groups/{}", encode(&key));
            let info = match limit {
                Some(limit) => serde_json::from_value(client.call(
                    "PUT",
                    &path,
                    Some(&json!({ "limit": limit })),
                )?)?,
                None => client.get(&path)?,
            };
            (info, json)
        }
        GroupCommand::Rate {
            key,
            rate,
            burst,
            off,
            json,
        } => {
            let path = format!("/v1/groups/{}", encode(&key));
            let body = match (rate, off) {
                (Some(rate), _) => {
                    let rate = GroupRate::parse(&rate, burst).map_err(anyhow::Error::msg)?;
                    let rate = json!({
                        "limit": rate.limit,
                        "period": period_text(rate.period),
                        "burst": rate.burst,
                    });
                    Some(json!({ "rate": rate }))
                }
                (None, true) => Some(json!({ "rate": null })),
                (None, false) => None,
            };
            let info = match body {
                Some(body) => serde_json::from_value(client.call("PUT", &path, Some(&body))?)?,
                None => client.get(&path)?,
            };
            (info, json)
        }
        GroupCommand::Pause { key, json } => {
            let path = format!("/v1/groups/{}/pause", encode(&key));
            (
                serde_json::from_value(client.call("POST", &path, None)?)?,
                json,
            )
        }
        GroupCommand::Resume { key, json } => {
            let path = format!("/v1/groups/{}/resume", encode(&key));
            (
                serde_json::from_value(client.call("POST", &path, None)?)?,
                json,
            )
        }
        GroupCommand::Ls { .. } => unreachable!("listed above"),
    };
    if json {
        print_json(&info)?;
    } else {
        let paused = if info.paused { " (paused)" } else { "" };
        outln!(
            "group {}: limit {}{paused}, rate {}, {} running, {} pending",
            info.key,
            info.limit,
            shown_rate(info.rate.as_ref()),
            info.running,
            info.pending
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Every group, page after page: a table, or one JSON array.
fn list(client: &Client, json: bool) -> anyhow::Result<ExitCode> {
    let mut groups: Vec<GroupRow> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(after) => format!("/v1/groups?limit=500&cursor={}", encode(after)),
            None => "/v1/groups?limit=500".to_owned(),
        };
        let page: GroupListPage = client.get(&path)?;
        groups.extend(page.groups);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    if json {
        print_json(&groups)?;
        return Ok(ExitCode::SUCCESS);
    }
    if groups.is_empty() {
        outln!("no groups")?;
        return Ok(ExitCode::SUCCESS);
    }
    let width = groups.iter().map(|g| g.key.len()).max().unwrap_or(5).max(5);
    outln!(
        "{:<width$}  {:>7}  {:>7}  {:>14}  paused",
        "group",
        "limit",
        "running",
        "rate"
    )?;
    for g in &groups {
        let paused = if g.paused { "yes" } else { "" };
        outln!(
            "{:<width$}  {:>7}  {:>7}  {:>14}  {paused}",
            g.key,
            g.limit,
            g.running,
            shown_rate(g.rate.as_ref())
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A period as the API takes it: a whole number of its largest unit that divides it.
fn period_text(period: std::time::Duration) -> String {
    let ms = period.as_millis();
    match ms {
        _ if ms.is_multiple_of(86_400_000) => format!("{}d", ms / 86_400_000),
        _ if ms.is_multiple_of(3_600_000) => format!("{}h", ms / 3_600_000),
        _ if ms.is_multiple_of(60_000) => format!("{}m", ms / 60_000),
        _ if ms.is_multiple_of(1000) => format!("{}s", ms / 1000),
        _ => format!("{ms}ms"),
    }
}

/// A rate as the commands print it: `5/1s burst 10`, or `none`.
pub(super) fn shown_rate(rate: Option<&GroupRate>) -> String {
    match rate {
        None => "none".to_owned(),
        Some(r) => {
            let period = humantime::format_duration(r.period);
            match r.burst {
                1 => format!("{}/{period}", r.limit),
                burst => format!("{}/{period} burst {burst}", r.limit),
            }
        }
    }
}
