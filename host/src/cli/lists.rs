//! `qhost batch ls` and `qhost task ls`: lists from `GET /v1/batches` and `GET /v1/tasks`,
//! as tables newest first, with the command for the next page when there is one.

use clap::Args;
use serde::Deserialize;
use serde_json::Value;

use super::client::{Client, age, print_json, print_table};
use super::log;
use super::module::encode;
use crate::store::{BatchInfo, Micros, Progress, TaskInfo, TaskState};

#[derive(Debug, Args)]
pub struct BatchLsArgs {
    /// Only batches of this exact name.
    #[arg(long)]
    pub name: Option<String>,
    /// Only batches in these states: open, sealed, ended (comma-separated).
    #[arg(long)]
    pub state: Option<String>,
    #[command(flatten)]
    pub list: ListArgs,
}

#[derive(Debug, Args)]
pub struct TaskLsArgs {
    /// Only this batch's tasks (required with a batch handle).
    #[arg(long)]
    pub batch: Option<i64>,
    /// Only tasks in these states (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = clap::builder::PossibleValuesParser::new(TaskState::names())
    )]
    pub state: Vec<String>,
    /// Only this group's tasks.
    #[arg(long)]
    pub group: Option<String>,
    /// Only this module's tasks: its name, digest or the start of its digest.
    #[arg(long)]
    pub module: Option<String>,
    /// Only tasks that ended so: outcomes, comma-separated (`trap,lost`).
    #[arg(long)]
    pub outcome: Option<String>,
    #[command(flatten)]
    pub list: ListArgs,
}

/// What both lists take: a time range, and which page to show and how.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only those created (batches) or submitted (tasks) since: a time ago (`2h`) or an
    /// RFC 3339 time.
    #[arg(long)]
    pub since: Option<String>,
    /// Only those created (batches) or submitted (tasks) before: a time ago (`30m`) or an
    /// RFC 3339 time.
    #[arg(long)]
    pub until: Option<String>,
    /// The most rows to show (1 to 500).
    #[arg(short = 'n', long, default_value_t = 50)]
    pub limit: usize,
    /// Show the page after the one that printed this cursor.
    #[arg(long)]
    pub cursor: Option<String>,
    /// Print the page as JSON.
    #[arg(long)]
    pub json: bool,
}

impl ListArgs {
    /// `pairs` with the time range (as the parameters `{what}_after` and `{what}_before`),
    /// the page's size and its cursor, joined into a query.
    fn query(&self, mut pairs: Vec<String>, what: &str) -> anyhow::Result<String> {
        if let Some(since) = &self.since {
            let at = rfc3339(log::when(since, "--since")?);
            pairs.push(format!("{what}_after={at}"));
        }
        if let Some(until) = &self.until {
            let at = rfc3339(log::when(until, "--until")?);
            pairs.push(format!("{what}_before={at}"));
        }
        pairs.push(format!("limit={}", self.limit));
        if let Some(cursor) = &self.cursor {
            pairs.push(format!("cursor={}", encode(cursor)));
        }
        Ok(pairs.join("&"))
    }
}

#[derive(Debug, Deserialize)]
struct BatchRow {
    #[serde(flatten)]
    batch: BatchInfo,
    state: String,
}

#[derive(Debug, Deserialize)]
struct BatchPage {
    batches: Vec<BatchRow>,
    next_cursor: Option<String>,
}

#[derive(Debug, Deserialize)]
struct TaskRow {
    #[serde(flatten)]
    task: TaskInfo,
    waiting_on: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct TaskPage {
    tasks: Vec<TaskRow>,
    next_cursor: Option<String>,
    counts: Progress,
    counts_capped: bool,
}

fn rfc3339(at: Micros) -> String {
    encode(&super::client::time(at))
}

pub fn batch_ls(client: &Client, args: BatchLsArgs) -> anyhow::Result<()> {
    let mut pairs = Vec::new();
    if let Some(name) = &args.name {
        pairs.push(format!("name={}", encode(name)));
    }
    if let Some(state) = &args.state {
        pairs.push(format!("state={}", encode(state)));
    }
    let page: Value = client.get(&format!(
        "/v1/batches?{}",
        args.list.query(pairs, "created")?
    ))?;
    if args.list.json {
        return print_json(&page);
    }
    let page: BatchPage = serde_json::from_value(page)?;
    let rows: Vec<Vec<String>> = page
        .batches
        .iter()
        .map(|row| {
            let b = &row.batch;
            let p = &b.progress;
            let state = if b.paused {
                format!("{} (paused)", row.state)
            } else {
                row.state.clone()
            };
            vec![
                b.id.to_string(),
                b.name.clone().unwrap_or_else(|| "-".into()),
                state,
                format!("{}/{}", p.ended(), p.total()),
                format!("{}", p.waiting + p.ready + p.held),
                format!("{}", p.reserved + p.running),
                format!("{}", p.failed),
                age(b.created_at),
            ]
        })
        .collect();
    print_table(
        &[
            "ID",
            "NAME",
            "STATE",
            "ENDED",
            "PENDING",
            "RUNNING",
            "FAILED",
            "CREATED AGO",
        ],
        &rows,
    )?;
    more(page.next_cursor.as_deref())
}

pub fn task_ls(client: &Client, args: TaskLsArgs) -> anyhow::Result<()> {
    let mut pairs = Vec::new();
    if let Some(batch) = args.batch {
        pairs.push(format!("batch={batch}"));
    }
    if !args.state.is_empty() {
        pairs.push(format!("state={}", args.state.join(",")));
    }
    for (name, value) in [
        ("group", &args.group),
        ("module", &args.module),
        ("outcome", &args.outcome),
    ] {
        if let Some(value) = value {
            pairs.push(format!("{name}={}", encode(value)));
        }
    }
    let page: Value = client.get(&format!(
        "/v1/tasks?{}",
        args.list.query(pairs, "submitted")?
    ))?;
    if args.list.json {
        return print_json(&page);
    }
    let page: TaskPage = serde_json::from_value(page)?;
    let rows: Vec<Vec<String>> = page
        .tasks
        .iter()
        .map(|row| {
            let t = &row.task;
            vec![
                t.id.to_string(),
                t.batch.to_string(),
                t.state.as_str().to_owned(),
                t.module_name
                    .clone()
                    .unwrap_or_else(|| t.module.to_hex()[..12].to_owned()),
                t.key.clone().unwrap_or_else(|| "-".into()),
                t.group.clone().unwrap_or_else(|| "-".into()),
                t.order.to_string(),
                format!("{}/{}", t.attempts, t.max_attempts),
                row.waiting_on
                    .as_ref()
                    .map(waiting_text)
                    .or_else(|| t.outcome.map(outcome_text))
                    .unwrap_or_default(),
            ]
        })
        .collect();
    print_table(
        &[
            "ID",
            "BATCH",
            "STATE",
            "MODULE",
            "KEY",
            "GROUP",
            "ORDER",
            "ATTEMPTS",
            "WAITING ON / OUTCOME",
        ],
        &rows,
    )?;
    outln!(
        "{}{}",
        if page.counts_capped { "at least: " } else { "" },
        page.counts
    )?;
    more(page.next_cursor.as_deref())
}

/// How a task's attempt ended, in words: `timed out`, `returned an error`.
pub(super) fn outcome_text(outcome: crate::runtime::Outcome) -> String {
    use crate::runtime::Outcome::*;
    match outcome {
        Succeeded => "succeeded",
        GuestError => "returned an error",
        Trap => "trapped",
        Timeout => "timed out",
        MemoryLimit => "over its memory limit",
        OutputTooLarge => "output too large",
        HttpLimit => "over its HTTP limits",
        Budget => "stopped: its tenant's CPU budget ran out",
        Cancelled => "cancelled",
        Lost => "lost with its node",
        HostError => "failed in the host",
        Skipped => "skipped: a task it runs after did not succeed",
        Suspended => "suspended: waiting for its children",
        Deferred => "deferred: asked to run again later",
    }
    .to_owned()
}

/// `waiting_on` as a few words: `gate: order 2 has 3 open`.
pub(super) fn waiting_text(on: &Value) -> String {
    let n = |key: &str| on[key].as_i64().unwrap_or_default();
    let s = |key: &str| on[key].as_str().unwrap_or_default().to_owned();
    match on["kind"].as_str().unwrap_or_default() {
        "gate" => format!("gate: order {} has {} open", n("order"), n("open")),
        "after" => {
            let named: Vec<String> = on["tasks"]
                .as_array()
                .map(|tasks| {
                    tasks
                        .iter()
                        .map(|t| match t["key"].as_str() {
                            Some(key) => key.to_owned(),
                            None => format!("#{}", t["id"]),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let more = if n("open") as usize > named.len() {
                ", ..."
            } else {
                ""
            };
            format!("after {} open: {}{more}", n("open"), named.join(", "))
        }
        "batch_paused" => "batch paused".into(),
        "group_paused" => format!("group {} paused", s("group")),
        "delay" => format!("delayed, due {}", super::client::when(n("until"))),
        "retry" => format!("retry due {}", super::client::when(n("until"))),
        "group" => format!(
            "group {}: {} of {} running",
            s("group"),
            n("running"),
            n("limit")
        ),
        "budget" => format!(
            "tenant {}'s CPU budget is spent, until {}",
            s("tenant"),
            super::client::when(n("until"))
        ),
        "tenant" => format!(
            "tenant {}: {} of {} running",
            s("tenant"),
            n("running"),
            n("max_running")
        ),
        "held" => format!(
            "group {} held, until {}",
            s("group"),
            super::client::when(n("until"))
        ),
        "batch" => format!("batch: {} of {} running", n("running"), n("max_parallel")),
        other => other.to_owned(),
    }
}

/// The hint for the next page.
fn more(cursor: Option<&str>) -> anyhow::Result<()> {
    if let Some(cursor) = cursor {
        outln!("more: --cursor {cursor}")?;
    }
    Ok(())
}
