//! `qhost task ls|show|output|logs|cancel|retry|priority`: tasks listed, one task, or
//! (cancel, retry, priority) the tasks a filter names. The token may be the admin token
//! or the handle of the task's batch (`--token qhb_...`).

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde::Deserialize;

use super::client::{Client, ConnectArgs, duration, print_json, when};
use super::task_bulk::{self, Filter};
use crate::store::{AttemptRecord, TaskId, TaskInfo};

#[derive(Debug, Args)]
pub struct TaskArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[command(subcommand)]
    pub command: TaskCommand,
}

#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// List tasks, newest first, with what holds each pending one back.
    Ls(super::lists::TaskLsArgs),
    /// Show a task and its attempts.
    Show {
        /// The task's id.
        task: TaskId,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a task's output, as it is.
    Output {
        /// The task's id.
        task: TaskId,
        /// Print it as JSON: its size, and the bytes as text (`output`), with
        /// `output_base64` beside when they are not UTF-8.
        #[arg(long)]
        json: bool,
    },
    /// Print what a task's attempts said: log lines, stdout and stderr, as text.
    Logs {
        /// The task's id.
        task: TaskId,
        /// Only this attempt (1 is the first).
        #[arg(long)]
        attempt: Option<u32>,
        /// Keep printing attempts as they end, until the task has ended.
        #[arg(long, short)]
        follow: bool,
        /// One JSON object per attempt and line, whole.
        #[arg(long)]
        json: bool,
    },
    /// Cancel a pending task, or stop a running one; or every task a filter names.
    Cancel {
        /// The task's id (none: the tasks the filter names).
        task: Option<TaskId>,
        #[command(flatten)]
        filter: Filter,
    },
    /// Run a failed or cancelled task again, with fresh attempts; or the failed tasks a
    /// filter names (with --outcome, those that ended so).
    Retry {
        /// The task's id (none: the tasks the filter names).
        task: Option<TaskId>,
        #[command(flatten)]
        filter: Filter,
    },
    /// Change the priority of a task that has not started (`ID N`), or of those a filter
    /// names (`N`).
    Priority {
        /// The task's id then the priority (higher runs first), or the priority alone with
        /// a filter.
        #[arg(num_args = 1..=2, required = true, allow_negative_numbers = true)]
        values: Vec<i64>,
        #[command(flatten)]
        filter: Filter,
    },
}

/// `GET /v1/tasks/{id}`: the task with its attempts.
#[derive(Debug, Deserialize, serde::Serialize)]
struct TaskView {
    #[serde(flatten)]
    task: TaskInfo,
    /// What holds it back, as the server says (`WaitingOn`).
    waiting_on: Option<serde_json::Value>,
    log: Vec<AttemptRecord>,
}

/// `task output --json`: the bytes as text, with their base64 when they are not UTF-8,
/// as an attempt's stdout travels.
#[derive(serde::Serialize)]
struct OutputJson {
    task: TaskId,
    /// In bytes.
    size: usize,
    #[serde(flatten, with = "crate::store::text::output")]
    output: Vec<u8>,
}

pub fn run(args: TaskArgs) -> anyhow::Result<ExitCode> {
    let client = Client::new(&args.connect)?;
    match args.command {
        TaskCommand::Show { task, json } => {
            let view: TaskView = client.get(&format!("/v1/tasks/{task}"))?;
            if json {
                print_json(&view)?;
                return Ok(ExitCode::SUCCESS);
            }
            let t = &view.task;
            outln!("task {} in batch {}", t.id, t.batch)?;
            outln!(
                "  module    {}{}",
                t.module,
                t.module_name
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            )?;
            outln!("  state     {}", t.state.as_str())?;
            if let Some(on) = &view.waiting_on {
                outln!("  waits on  {}", super::lists::waiting_text(on))?;
            }
            outln!("  order     {}", t.order)?;
            outln!("  group     {}", t.group.as_deref().unwrap_or("-"))?;
            outln!("  priority  {}", t.priority)?;
            outln!("  attempts  {} of {}", t.attempts, t.max_attempts)?;
            outln!("  submitted {}", when(t.submitted_at))?;
            if let Some(due) = t.due_at {
                outln!("  due       {}", when(due))?;
            }
            if let Some(ended) = t.ended_at {
                outln!("  ended     {}", when(ended))?;
            }
            if let Some(outcome) = t.outcome {
                outln!("  outcome   {}", super::lists::outcome_text(outcome))?;
            }
            if let Some(error) = &t.error {
                outln!("  error     {error}")?;
            }
            if let Some(size) = t.output_size {
                outln!("  output    {size} bytes")?;
            }
            for a in &view.log {
                outln!(
                    "  attempt {} on {} slot {}: {} after {}{}",
                    a.attempt,
                    a.node,
                    a.slot.map(|s| s.to_string()).unwrap_or_else(|| "-".into()),
                    super::lists::outcome_text(a.outcome),
                    duration(a.ended_at - a.started_at),
                    a.error
                        .as_deref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default()
                )?;
            }
        }
        TaskCommand::Output { task, json } => {
            let output = client.get_bytes(&format!("/v1/tasks/{task}/output"))?;
            if json {
                print_json(&OutputJson {
                    task,
                    size: output.len(),
                    output,
                })?;
            } else {
                std::io::stdout().lock().write_all(&output)?;
            }
        }
        TaskCommand::Logs {
            task,
            attempt,
            follow,
            json,
        } => super::task_logs::run(&client, task, attempt, follow, json)?,
        TaskCommand::Ls(ls) => super::lists::task_ls(&client, ls)?,
        TaskCommand::Retry { task, filter } => task_bulk::retry(&client, task, filter)?,
        TaskCommand::Cancel { task, filter } => task_bulk::cancel(&client, task, filter)?,
        TaskCommand::Priority { values, filter } => task_bulk::priority(&client, &values, filter)?,
    }
    Ok(ExitCode::SUCCESS)
}
