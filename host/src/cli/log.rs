//! `qhost log`: the execution log, filtered, as a table or JSON lines; `--follow` keeps
//! printing attempts as they end.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde::Deserialize;

use super::client::{BatchRef, Client, ConnectArgs, duration, time, unreachable};
use super::module::encode;
use crate::scheduler::module_ref::SHOWN_DIGITS;
use crate::store::{AttemptRecord, TaskId, now_micros};
use crate::units::parse_duration;

/// How often `--follow` asks for new attempts.
const FOLLOW_EVERY: Duration = Duration::from_millis(500);
/// How long `--follow` waits before it tries a lost server again: doubling from the first
/// to the most.
const RECONNECT_FIRST: Duration = Duration::from_millis(100);
const RECONNECT_MOST: Duration = Duration::from_secs(5);
const PAGE: usize = 1000;

#[derive(Debug, Args)]
pub struct LogArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Only this batch (its handle, or its id with the admin token).
    #[arg(long)]
    pub batch: Option<BatchRef>,
    /// Only this task.
    #[arg(long)]
    pub task: Option<TaskId>,
    /// Only the tasks of this group.
    #[arg(long)]
    pub group: Option<String>,
    /// Only this outcome: succeeded, guest-error, trap, timeout, memory-limit,
    /// output-too-large, cancelled, lost.
    #[arg(long)]
    pub outcome: Option<String>,
    /// Only attempts that started within this long ago, e.g. `10m`.
    #[arg(long)]
    pub since: Option<String>,
    /// At most this many attempts (without --follow).
    #[arg(long, default_value_t = 1000)]
    pub limit: usize,
    /// Keep printing attempts as they end; through a restart of the server too, going on
    /// from the last attempt printed.
    #[arg(long, short)]
    pub follow: bool,
    /// One JSON object per attempt and line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Deserialize)]
struct LogPage {
    attempts: Vec<AttemptRecord>,
    next: Option<i64>,
}

pub fn run(args: LogArgs) -> anyhow::Result<ExitCode> {
    let mut client = Client::new(&args.connect)?;
    let mut filter = Vec::new();
    if let Some(batch) = &args.batch {
        client = batch.client(&client);
        filter.push(format!("batch={}", batch.id));
    }
    if let Some(task) = args.task {
        filter.push(format!("task={task}"));
    }
    if let Some(group) = &args.group {
        filter.push(format!("group={}", encode(group)));
    }
    if let Some(outcome) = &args.outcome {
        filter.push(format!("outcome={}", encode(outcome)));
    }
    if let Some(since) = &args.since {
        let ago = parse_duration(since).map_err(|e| anyhow::anyhow!("--since: {e}"))?;
        filter.push(format!("since={}", now_micros() - ago.as_micros() as i64));
    }
    let mut after: Option<i64> = None;
    let mut printed = 0usize;
    let mut header = !args.json;
    // Whether the server answered once; while it is lost, how long the last wait was.
    let mut reached = false;
    let mut lost: Option<Duration> = None;
    loop {
        let want = if args.follow {
            PAGE
        } else {
            PAGE.min(args.limit - printed)
        };
        if want == 0 {
            break;
        }
        let mut query = filter.clone();
        query.push(format!("limit={want}"));
        if let Some(after) = after {
            query.push(format!("after={after}"));
        }
        let path = format!("/v1/attempts?{}", query.join("&"));
        let page: LogPage = match client.get(&path) {
            Ok(page) => {
                reached = true;
                if lost.take().is_some() {
                    errln!("reconnected to {}", client.server());
                }
                page
            }
            Err(err) => {
                // A server that restarts keeps its log: go on from the last attempt printed.
                // One never reached is more likely a wrong address: that is said at once.
                let Some(gone) = unreachable(&err).filter(|_| args.follow && reached) else {
                    return Err(err);
                };
                let wait = match lost {
                    None => {
                        errln!(
                            "lost the qhost server at {} ({}); reconnecting until it is back",
                            client.server(),
                            gone.cause
                        );
                        RECONNECT_FIRST
                    }
                    Some(wait) => (wait * 2).min(RECONNECT_MOST),
                };
                lost = Some(wait);
                std::thread::sleep(wait);
                continue;
            }
        };
        let count = page.attempts.len();
        for attempt in &page.attempts {
            if header {
                outln!(
                    "{:<24}  {:>6}  {:>5}  {:<12}  {:>3}  {:>5}  {:<10}  {:<10}  {:>9}  OUTCOME",
                    "STARTED",
                    "TASK",
                    "BATCH",
                    "MODULE",
                    "TRY",
                    "ORDER",
                    "GROUP",
                    "NODE/SLOT",
                    "TOOK"
                )?;
                header = false;
            }
            print_attempt(attempt, args.json)?;
        }
        printed += count;
        after = page.next;
        if count < want {
            if !args.follow {
                break;
            }
            std::thread::sleep(FOLLOW_EVERY);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_attempt(a: &AttemptRecord, json: bool) -> anyhow::Result<()> {
    if json {
        outln!("{}", serde_json::to_string(a)?)?;
        return Ok(());
    }
    let place = format!(
        "{}/{}",
        a.node,
        a.slot.map(|s| s.to_string()).unwrap_or_else(|| "-".into())
    );
    // The module's name, or the start of its digest as `module ls` shows it.
    let module = match &a.module_name {
        Some(name) => name.clone(),
        None => a.module.to_hex()[..SHOWN_DIGITS].to_owned(),
    };
    outln!(
        "{:<24}  {:>6}  {:>5}  {:<12}  {:>3}  {:>5}  {:<10}  {:<10}  {:>9}  {}{}",
        time(a.started_at),
        a.task,
        a.batch,
        module,
        a.attempt,
        a.order,
        a.group.as_deref().unwrap_or("-"),
        place,
        duration(a.ended_at - a.started_at),
        a.outcome.as_str(),
        a.error
            .as_deref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default()
    )?;
    Ok(())
}
