//! `qhost task logs ID`: what a task's attempts said, as text a person reads: each line
//! prefixed by where it came from (`log`, `stdout`, `stderr`), under a header per attempt.
//! `--follow` prints attempts as they end, until the task has ended; `--json` prints each
//! attempt whole as a line of JSON.

use std::time::Duration;

use serde::Deserialize;

use super::client::{Client, duration, print_json_line};
use crate::store::{AttemptRecord, TaskId, TaskInfo};

/// How often `--follow` asks whether another attempt ended.
const FOLLOW_EVERY: Duration = Duration::from_millis(500);
const PAGE: usize = 1000;

#[derive(Debug, Deserialize)]
struct LogPage {
    attempts: Vec<AttemptRecord>,
    next: Option<i64>,
}

pub fn run(
    client: &Client,
    task: TaskId,
    attempt: Option<u32>,
    follow: bool,
    json: bool,
) -> anyhow::Result<()> {
    let print = |a: &AttemptRecord| match json {
        true => print_json_line(a),
        false => print_attempt(a),
    };
    let mut after: Option<i64> = None;
    let mut seen_attempt = false;
    loop {
        // The state is read before the log: once it says ended, the log holds every attempt.
        let info: TaskInfo = client.get(&format!("/v1/tasks/{task}"))?;
        loop {
            let mut path = format!(
                "/v1/attempts?batch={}&task={task}&order=oldest&limit={PAGE}",
                info.batch
            );
            if let Some(after) = after {
                path.push_str(&format!("&after={after}"));
            }
            let page: LogPage = client.get(&path)?;
            for a in &page.attempts {
                if attempt.is_none_or(|n| n == a.attempt) {
                    // A list cuts long fields short: the attempt's own route has them whole.
                    if a.cut.is_empty() {
                        print(a)?;
                    } else {
                        let whole: AttemptRecord =
                            client.get(&format!("/v1/tasks/{task}/attempts/{}", a.attempt))?;
                        print(&whole)?;
                    }
                    seen_attempt = true;
                }
            }
            after = page.next.or(after);
            // A page holds fewer than asked when its attempts are large: the log ends at
            // an empty one.
            if page.attempts.is_empty() {
                break;
            }
        }
        if !follow || info.state.is_ended() || attempt.is_some_and(|_| seen_attempt) {
            break;
        }
        std::thread::sleep(FOLLOW_EVERY);
    }
    if let Some(n) = attempt
        && !seen_attempt
    {
        return Err(super::exit::not_found(format!(
            "task {task} has no attempt {n}"
        )));
    }
    Ok(())
}

fn print_attempt(a: &AttemptRecord) -> anyhow::Result<()> {
    let slot = a.slot.map(|s| s.to_string()).unwrap_or_else(|| "-".into());
    let error = a
        .error
        .as_deref()
        .map(|e| format!(": {e}"))
        .unwrap_or_default();
    outln!(
        "== attempt {} on {}/{slot}: {} after {}{error}",
        a.attempt,
        a.node,
        super::lists::outcome_text(a.outcome),
        duration(a.ended_at - a.started_at),
    )?;
    for line in &a.logs {
        outln!(
            "log    +{:<9} {:<5} {}",
            duration(line.at_micros as i64),
            line.level.as_str(),
            line.message
        )?;
    }
    for (name, bytes) in [("stdout", &a.stdout), ("stderr", &a.stderr)] {
        for line in String::from_utf8_lossy(bytes).lines() {
            outln!("{name:<6} {line}")?;
        }
    }
    Ok(())
}
