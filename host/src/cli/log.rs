//! `qhost log`: the execution log, filtered, newest first, as a table or JSON lines;
//! `--tail N` prints the last N oldest first, and `--follow` keeps printing attempts as
//! they end.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde::Deserialize;

use super::client::{BatchRef, Client, ConnectArgs, duration, time, unreachable};
use super::module::encode;
use crate::scheduler::module_ref::SHOWN_DIGITS;
use crate::store::{AttemptRecord, TaskId, now_micros};
use crate::units::parse_time_or_ago;

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
    /// Only this batch (its handle, or its id with the admin token); with a batch handle
    /// as the token, its batch.
    #[arg(long)]
    pub batch: Option<BatchRef>,
    /// Only this task.
    #[arg(long)]
    pub task: Option<TaskId>,
    /// Only the tasks of this group.
    #[arg(long)]
    pub group: Option<String>,
    /// Only this outcome: succeeded, guest-error, trap, timeout, memory-limit,
    /// output-too-large, http-limit, budget, cancelled, lost, host-error, suspended,
    /// deferred.
    #[arg(long)]
    pub outcome: Option<String>,
    /// Only attempts that started at or after this: a span ago (`10m`) or an RFC 3339
    /// time (`2026-11-24T09:00:00Z`).
    #[arg(long)]
    pub since: Option<String>,
    /// Only attempts that started before this: a span ago (`1h`) or an RFC 3339 time.
    #[arg(long)]
    pub until: Option<String>,
    /// At most this many attempts, newest first (without --tail and --follow).
    #[arg(long, default_value_t = 1000)]
    pub limit: usize,
    /// Only the last N attempts, printed oldest to newest as `tail` does; with --follow,
    /// those printed before following (default 10).
    #[arg(long = "tail", short = 'n', value_name = "N")]
    pub tail: Option<usize>,
    /// Print the last attempts (see --tail), then keep printing attempts as they end;
    /// through a restart of the server too, going on from the last attempt printed.
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

/// What `--follow` prints before following, without `--tail`.
const FOLLOW_TAIL: usize = 10;

pub fn run(args: LogArgs) -> anyhow::Result<ExitCode> {
    let mut client = Client::new(&args.connect)?;
    let mut filter = Vec::new();
    if let Some(batch) = &args.batch {
        client = batch.client(&client);
        filter.push(format!("batch={}", batch.id));
    } else if let Some(batch) = client.handle_batch() {
        // A handle reads its own batch's log only: the filter it needs goes without saying.
        filter.push(format!("batch={batch}"));
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
        filter.push(format!("since={}", when(since, "--since")?));
    }
    if let Some(until) = &args.until {
        filter.push(format!("until={}", when(until, "--until")?));
    }
    let mut out = Printer {
        header: !args.json,
        json: args.json,
    };
    match args.tail.or(args.follow.then_some(FOLLOW_TAIL)) {
        // The last N, read newest first from the newest now, printed oldest first; then
        // on from the newest.
        Some(n) => {
            let head = page(&client, &filter, "newest", None, None, 1)?.next;
            let mut attempts = match head {
                Some(head) if n > 0 => newest_first(&client, &filter, Some(head + 1), n)?,
                _ => Vec::new(),
            };
            attempts.reverse();
            for attempt in &attempts {
                out.print(attempt)?;
            }
            if args.follow {
                follow(&client, &filter, head, &mut out)?;
            }
        }
        None => {
            for attempt in newest_first(&client, &filter, None, args.limit)? {
                out.print(&attempt)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A `--since` or `--until`: a span ago, or an RFC 3339 time.
pub(super) fn when(text: &str, flag: &str) -> anyhow::Result<i64> {
    parse_time_or_ago(text, now_micros()).map_err(|e| anyhow::anyhow!("{flag}: {e}"))
}

/// One page of the log.
fn page(
    client: &Client,
    filter: &[String],
    order: &str,
    before: Option<i64>,
    after: Option<i64>,
    limit: usize,
) -> anyhow::Result<LogPage> {
    let mut query = filter.to_vec();
    query.push(format!("order={order}"));
    query.push(format!("limit={limit}"));
    if let Some(before) = before {
        query.push(format!("before={before}"));
    }
    if let Some(after) = after {
        query.push(format!("after={after}"));
    }
    client.get(&format!("/v1/attempts?{}", query.join("&")))
}

/// The newest `n` attempts before the position `before` (none: of the whole log),
/// newest first.
fn newest_first(
    client: &Client,
    filter: &[String],
    mut before: Option<i64>,
    n: usize,
) -> anyhow::Result<Vec<AttemptRecord>> {
    let mut attempts = Vec::new();
    while attempts.len() < n {
        let want = PAGE.min(n - attempts.len());
        let page = page(client, filter, "newest", before, None, want)?;
        let count = page.attempts.len();
        attempts.extend(page.attempts);
        before = page.next;
        // A page holds fewer than asked when its attempts are large: the log ends at an
        // empty one.
        if count == 0 {
            break;
        }
    }
    Ok(attempts)
}

/// Prints attempts as they end, after the position `after` (none: from the start).
fn follow(
    client: &Client,
    filter: &[String],
    mut after: Option<i64>,
    out: &mut Printer,
) -> anyhow::Result<()> {
    // The server answered once already; while it is lost, how long the last wait was.
    let mut lost: Option<Duration> = None;
    loop {
        let page = match page(client, filter, "oldest", None, after, PAGE) {
            Ok(page) => {
                if lost.take().is_some() {
                    errln!("reconnected to {}", client.server());
                }
                page
            }
            Err(err) => {
                // A server that restarts keeps its log: go on from the last attempt printed.
                let Some(gone) = unreachable(&err) else {
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
        for attempt in &page.attempts {
            out.print(attempt)?;
        }
        after = page.next;
        if page.attempts.is_empty() {
            std::thread::sleep(FOLLOW_EVERY);
        }
    }
}

/// Prints attempts as a table under one header, or as JSON lines.
struct Printer {
    header: bool,
    json: bool,
}

impl Printer {
    fn print(&mut self, attempt: &AttemptRecord) -> anyhow::Result<()> {
        if self.header {
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
            self.header = false;
        }
        print_attempt(attempt, self.json)
    }
}

fn print_attempt(a: &AttemptRecord, json: bool) -> anyhow::Result<()> {
    if json {
        return super::client::print_json_line(a);
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
