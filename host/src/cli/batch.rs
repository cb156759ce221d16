//! `qhost batch ls|open|submit|show|priority|pause|resume|limit|quota|retry|seal|cancel|wait|release`:
//! a batch, named by its handle (or by its id, with the admin token).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::EXIT_TASK_FAILED;
use super::client::{BatchRef, Client, ConnectArgs, count, print_json, when};
use super::plan::Plan;
use crate::store::BatchInfo;

#[derive(Debug, Args)]
pub struct BatchArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[command(subcommand)]
    pub command: BatchCommand,
}

#[derive(Debug, Subcommand)]
pub enum BatchCommand {
    /// List batches, newest first, with their states and progress.
    Ls(super::lists::BatchLsArgs),
    /// Open an empty batch and print its id and handle.
    Open {
        /// A name shown with the batch.
        #[arg(long)]
        name: Option<String>,
        /// Higher runs first, among ready tasks of all batches.
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        priority: i32,
        /// At most this many of the batch's tasks run at once.
        #[arg(long)]
        max_parallel: Option<u32>,
        /// Cancel the batch's pending tasks when one fails for good.
        #[arg(long)]
        halt_on_failure: bool,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Open a batch and submit a plan file's tasks into it, all in one request: a refused
    /// plan leaves no batch. A request that does not get through is sent again, and done
    /// once all the same.
    Submit {
        /// The plan: TOML with `[[task]]` tables (module, input | input_file | input_json,
        /// order, group, priority) and optional batch settings (name, priority,
        /// max_parallel, failure_policy).
        plan: PathBuf,
        /// Submit into this batch instead of opening one.
        #[arg(long, value_name = "BATCH")]
        batch: Option<BatchRef>,
        /// Show progress until the batch has ended; exit 1 if a task failed.
        #[arg(long)]
        wait: bool,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a batch and its progress.
    Show {
        /// The batch: its handle, or its id with the admin token.
        batch: BatchRef,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Change the priority of the batch and of its pending tasks.
    Priority {
        /// The batch: its handle, or its id with the admin token.
        batch: BatchRef,
        /// The new priority: higher runs first.
        #[arg(allow_negative_numbers = true)]
        priority: i32,
        /// Print the server's answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Hold the batch's tasks that have not started, until it is resumed.
    Pause {
        /// The batch: its handle, or its id with the admin token.
        batch: BatchRef,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Let a paused batch's tasks run again, in the order they had.
    Resume {
        /// The batch: its handle, or its id with the admin token.
        batch: BatchRef,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show how many of the batch's tasks may run at once, or set it (`none`: no limit;
    /// 0 holds them all).
    Limit {
        /// The batch: its handle, or its id with the admin token.
        batch: BatchRef,
        /// A number, or `none`.
        limit: Option<Limit>,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show what the batch may store and what it stores; change its quotas (the admin's
    /// to do).
    Quota(super::batch_quota::QuotaArgs),
    /// Run the batch's failed tasks again, with fresh attempts.
    Retry {
        /// The batch: its handle, or its id with the admin token.
        batch: BatchRef,
        /// Only tasks that ended so: outcomes, comma-separated (`trap,lost`); `cancelled`
        /// runs cancelled tasks again too.
        #[arg(long, value_delimiter = ',')]
        outcome: Vec<String>,
        /// Print the server's answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Refuse further submissions into the batch.
    Seal {
        /// The batch: its handle, or its id with the admin token.
        batch: BatchRef,
        /// Print the server's answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Cancel the batch's pending tasks and stop its running ones.
    Cancel {
        /// The batch: its handle, or its id with the admin token.
        batch: BatchRef,
        /// Print the server's answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show progress until every task of the batch has ended; exit 1 if one failed.
    Wait {
        /// The batch: its handle, or its id with the admin token.
        batch: BatchRef,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Forget the batch, its tasks and their records.
    Release {
        /// The batch: its handle, or its id with the admin token.
        batch: BatchRef,
        /// Print the server's answer as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: BatchArgs) -> anyhow::Result<ExitCode> {
    let client = Client::new(&args.connect)?;
    match args.command {
        BatchCommand::Ls(ls) => super::lists::batch_ls(&client, ls)?,
        BatchCommand::Open {
            name,
            priority,
            max_parallel,
            halt_on_failure,
            json,
        } => {
            let mut body = json!({ "name": name, "priority": priority });
            if let Some(max) = max_parallel {
                body["max_parallel"] = json!(max);
            }
            if halt_on_failure {
                body["failure_policy"] = json!("halt");
            }
            let opened = client.call("POST", "/v1/batches", Some(&body))?;
            if json {
                print_json(&opened)?;
            } else {
                outln!("batch {}", opened["batch"]["id"])?;
                outln!("handle {}", opened["handle"].as_str().unwrap_or_default())?;
            }
        }
        BatchCommand::Submit {
            plan: path,
            batch,
            wait,
            json,
        } => {
            let plan = Plan::read(&path)?;
            let base = path.parent().unwrap_or(std::path::Path::new("."));
            let tasks = plan.tasks_json(base)?;
            let webhook = plan
                .webhook_json(base)
                .with_context(|| format!("in the plan {}", path.display()))?;
            // One request, under an idempotency key: sent again if it does not get
            // through, and done once.
            let (batch, ids) = match batch {
                Some(batch) => {
                    anyhow::ensure!(
                        webhook.is_none(),
                        "the plan {} has a [webhook], which is set when a batch opens: \
                         batch {} is open already (submit the plan without --batch to open \
                         one with it)",
                        path.display(),
                        batch.id
                    );
                    let answer = batch.client(&client).call_once(
                        "POST",
                        &format!("/v1/batches/{}/tasks", batch.id),
                        &tasks,
                    )?;
                    (batch, answer["tasks"].clone())
                }
                None => {
                    let mut body = plan.batch_json();
                    body["tasks"] = tasks["tasks"].clone();
                    if let Some(webhook) = webhook {
                        body["webhook"] = webhook;
                    }
                    let opened = client.call_once("POST", "/v1/batches", &body)?;
                    let handle = opened["handle"].as_str().unwrap_or_default();
                    let batch: BatchRef = handle.parse().map_err(|e: String| anyhow::anyhow!(e))?;
                    (batch, opened["tasks"].clone())
                }
            };
            let mut report = json!({ "batch": batch.id, "handle": batch.handle, "tasks": ids });
            if !json {
                outln!("batch {}", batch.id)?;
                if let Some(handle) = &batch.handle {
                    outln!("handle {handle}")?;
                }
                outln!("submitted {} tasks", plan.tasks.len())?;
            }
            if !wait {
                if json {
                    print_json(&report)?;
                }
                return Ok(ExitCode::SUCCESS);
            }
            let info = wait_batch(&batch.client(&client), batch.id, !json)?;
            if json {
                report["progress"] = serde_json::to_value(info.progress)?;
                print_json(&report)?;
            } else {
                print_summary(&info)?;
            }
            return Ok(exit_code(&info));
        }
        BatchCommand::Show { batch, json } => {
            let info: BatchInfo = batch
                .client(&client)
                .get(&format!("/v1/batches/{}", batch.id))?;
            if json {
                print_json(&info)?;
            } else {
                let p = info.progress;
                outln!(
                    "batch {}{}",
                    info.id,
                    info.name.map(|n| format!(" ({n})")).unwrap_or_default()
                )?;
                outln!("  created   {}", when(info.created_at))?;
                outln!("  priority  {}", info.priority)?;
                if let Some(max) = info.max_parallel {
                    outln!("  max parallel {max}")?;
                }
                outln!("  sealed    {}", if info.sealed { "yes" } else { "no" })?;
                if info.paused {
                    outln!("  paused    yes (`qhost batch resume {}`)", info.id)?;
                }
                outln!("  tasks     {p}")?;
            }
        }
        BatchCommand::Priority {
            batch,
            priority,
            json,
        } => {
            let answer = batch.client(&client).call(
                "PUT",
                &format!("/v1/batches/{}/priority", batch.id),
                Some(&json!({ "priority": priority })),
            )?;
            if json {
                return done_json(&answer, json!({ "batch": batch.id, "priority": priority }));
            }
            let changed = answer["changed"].as_u64().unwrap_or_default();
            outln!(
                "batch {} priority {priority} ({} changed)",
                batch.id,
                count(changed, "pending task", "pending tasks")
            )?;
        }
        BatchCommand::Pause { batch, json } => pause(&client, &batch, true, json)?,
        BatchCommand::Resume { batch, json } => pause(&client, &batch, false, json)?,
        BatchCommand::Limit { batch, limit, json } => {
            let path = format!("/v1/batches/{}", batch.id);
            let info: BatchInfo = match limit {
                Some(limit) => serde_json::from_value(batch.client(&client).call(
                    "PUT",
                    &format!("{path}/max_parallel"),
                    Some(&json!({ "max_parallel": limit.0 })),
                )?)?,
                None => batch.client(&client).get(&path)?,
            };
            if json {
                print_json(&info)?;
            } else {
                let limit = info
                    .max_parallel
                    .map_or("no limit".to_owned(), |n| format!("max parallel {n}"));
                let paused = if info.paused { ", paused" } else { "" };
                outln!("batch {}: {limit}{paused}", info.id)?;
            }
        }
        BatchCommand::Quota(quota) => super::batch_quota::run(&client, quota)?,
        BatchCommand::Retry {
            batch,
            outcome,
            json,
        } => {
            let mut path = format!("/v1/batches/{}/retry", batch.id);
            if !outcome.is_empty() {
                path.push_str(&format!("?outcome={}", outcome.join(",")));
            }
            let answer = batch.client(&client).call("POST", &path, None)?;
            if json {
                return done_json(&answer, Value::Null);
            }
            let retried = answer["retried"].as_u64().unwrap_or_default();
            outln!(
                "batch {}: {} to run again",
                batch.id,
                count(retried, "task", "tasks")
            )?;
        }
        BatchCommand::Seal { batch, json } => {
            let answer = batch.client(&client).call(
                "POST",
                &format!("/v1/batches/{}/seal", batch.id),
                None,
            )?;
            if json {
                return done_json(&answer, json!({ "batch": batch.id, "sealed": true }));
            }
            outln!("batch {} sealed", batch.id)?;
        }
        BatchCommand::Cancel { batch, json } => {
            let answer = batch.client(&client).call(
                "POST",
                &format!("/v1/batches/{}/cancel", batch.id),
                None,
            )?;
            if json {
                return done_json(&answer, Value::Null);
            }
            let cancelled = answer["cancelled"].as_u64().unwrap_or_default();
            outln!(
                "batch {}: {} cancelled",
                batch.id,
                count(cancelled, "task", "tasks")
            )?;
        }
        BatchCommand::Wait { batch, json } => {
            let info = wait_batch(&batch.client(&client), batch.id, !json)?;
            if json {
                print_json(&info)?;
            } else {
                print_summary(&info)?;
            }
            return Ok(exit_code(&info));
        }
        BatchCommand::Release { batch, json } => {
            let answer =
                batch
                    .client(&client)
                    .call("DELETE", &format!("/v1/batches/{}", batch.id), None)?;
            if json {
                return done_json(&answer, json!({ "batch": batch.id, "released": true }));
            }
            outln!("batch {} released", batch.id)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints a write's answer as JSON (or `instead` when the server answered with no body),
/// and ends the command with success.
pub(super) fn done_json(answer: &Value, instead: Value) -> anyhow::Result<ExitCode> {
    print_json(if answer.is_null() { &instead } else { answer })?;
    Ok(ExitCode::SUCCESS)
}

/// Pauses (`pause`) or resumes a batch, and says how its tasks stand then.
fn pause(client: &Client, batch: &BatchRef, pause: bool, json: bool) -> anyhow::Result<()> {
    let verb = if pause { "pause" } else { "resume" };
    let info: BatchInfo = serde_json::from_value(batch.client(client).call(
        "POST",
        &format!("/v1/batches/{}/{verb}", batch.id),
        None,
    )?)?;
    if json {
        return print_json(&info);
    }
    let p = info.progress;
    let state = if info.paused { "paused" } else { "resumed" };
    outln!(
        "batch {} {state}: {} held, {} ready, {} running",
        info.id,
        p.held,
        p.ready,
        p.running + p.reserved
    )?;
    Ok(())
}

/// A batch limit as given: a number, or `none`.
#[derive(Debug, Clone, Copy)]
pub struct Limit(Option<u32>);

impl std::str::FromStr for Limit {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if text == "none" {
            return Ok(Limit(None));
        }
        text.parse()
            .map(|n| Limit(Some(n)))
            .map_err(|_| "give a number of tasks (0 holds them all), or `none`".to_owned())
    }
}

/// Long-polls the batch until all its tasks have ended, drawing a progress bar on a
/// terminal when `bar` is set.
pub fn wait_batch(client: &Client, batch: i64, bar: bool) -> anyhow::Result<BatchInfo> {
    let mut info: BatchInfo = client.get(&format!("/v1/batches/{batch}"))?;
    let progress = if bar {
        indicatif::ProgressBar::new(info.progress.total())
    } else {
        indicatif::ProgressBar::hidden()
    };
    progress.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} ended {msg}",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    // While a bar shows, come back every second to redraw it.
    let timeout = if progress.is_hidden() { "60s" } else { "1s" };
    loop {
        let p = info.progress;
        progress.set_length(p.total());
        progress.set_position(p.ended());
        progress.set_message(format!("({} running, {} failed)", p.running, p.failed));
        if p.is_done() {
            break;
        }
        info = client.get(&format!("/v1/batches/{batch}/wait?timeout={timeout}"))?;
    }
    progress.finish();
    Ok(info)
}

fn print_summary(info: &BatchInfo) -> std::io::Result<()> {
    let p = info.progress;
    outln!(
        "batch {} ended: {} succeeded, {} failed, {} cancelled",
        info.id,
        p.succeeded,
        p.failed,
        p.cancelled
    )?;
    if p.failed > 0 {
        outln!(
            "the attempts and their errors: `qhost log --batch {}`",
            info.id
        )?;
    }
    Ok(())
}

fn exit_code(info: &BatchInfo) -> ExitCode {
    if info.progress.failed > 0 {
        ExitCode::from(EXIT_TASK_FAILED)
    } else {
        ExitCode::SUCCESS
    }
}
