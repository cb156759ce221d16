//! `qhost task show|output|logs|cancel|retry`: one task. The token may be the admin token
//! or the handle of the task's batch (`--token qhb_...`).

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde::Deserialize;

use super::client::{Client, ConnectArgs, duration, print_json, time};
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
    },
    /// Cancel a pending task, or stop a running one.
    Cancel {
        /// The task's id.
        task: TaskId,
    },
    /// Run a failed or cancelled task again, with fresh attempts.
    Retry {
        /// The task's id.
        task: TaskId,
    },
}

/// `GET /v1/tasks/{id}`: the task with its attempts.
#[derive(Debug, Deserialize, serde::Serialize)]
struct TaskView {
    #[serde(flatten)]
    task: TaskInfo,
    log: Vec<AttemptRecord>,
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
            outln!("  order     {}", t.order)?;
            outln!("  group     {}", t.group.as_deref().unwrap_or("-"))?;
            outln!("  priority  {}", t.priority)?;
            outln!("  attempts  {} of {}", t.attempts, t.max_attempts)?;
            outln!("  submitted {}", time(t.submitted_at))?;
            if let Some(due) = t.due_at {
                outln!("  due at    {}", time(due))?;
            }
            if let Some(ended) = t.ended_at {
                outln!("  ended     {}", time(ended))?;
            }
            if let Some(outcome) = t.outcome {
                outln!("  outcome   {}", outcome.as_str())?;
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
                    a.outcome.as_str(),
                    duration(a.ended_at - a.started_at),
                    a.error
                        .as_deref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default()
                )?;
            }
        }
        TaskCommand::Output { task } => {
            let output = client.get_bytes(&format!("/v1/tasks/{task}/output"))?;
            std::io::stdout().lock().write_all(&output)?;
        }
        TaskCommand::Logs {
            task,
            attempt,
            follow,
        } => super::task_logs::run(&client, task, attempt, follow)?,
        TaskCommand::Retry { task } => {
            let info: TaskInfo = serde_json::from_value(client.call(
                "POST",
                &format!("/v1/tasks/{task}/retry"),
                None,
            )?)?;
            outln!(
                "task {task}: {}, attempts {} of {}",
                info.state.as_str(),
                info.attempts,
                info.max_attempts
            )?;
        }
        TaskCommand::Cancel { task } => {
            let answer = client.call("POST", &format!("/v1/tasks/{task}/cancel"), None)?;
            outln!(
                "task {task}: {}",
                answer["result"].as_str().unwrap_or_default()
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
