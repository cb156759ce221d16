//! `qhost schedule add|ls|show|pause|resume|rm|run-now`: schedules that open a batch from
//! a plan at each tick of a cron expression.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use serde::Deserialize;
use serde_json::json;

use super::client::{Client, ConnectArgs, print_json, print_table, time, when};
use super::module::encode;
use super::plan::Plan;
use crate::store::{ScheduleInfo, Tick};

#[derive(Debug, Args)]
pub struct ScheduleArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[command(subcommand)]
    pub command: ScheduleCommand,
}

#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Create a schedule: at each tick, a batch opens from the plan.
    Add {
        /// The schedule's name: letters, digits, `-`, `_` and `.`.
        name: String,
        /// When: `MIN HOUR DAY MONTH WEEKDAY`, with seconds first if six fields, or
        /// `@hourly`, `@daily`, ...
        #[arg(long)]
        cron: String,
        /// The plan each tick submits (the TOML of `qhost batch submit`).
        #[arg(long)]
        plan: PathBuf,
        /// The time zone the expression is read in.
        #[arg(long, default_value = "UTC")]
        timezone: String,
        /// While the last tick's batch is open: `skip` the tick, `queue` it until that
        /// batch has ended, or `allow` it.
        #[arg(long, default_value = "skip")]
        overlap: String,
        /// Ticks missed while no node ran: `none` fire, the `last` fires, or `all:N` (the
        /// last N).
        #[arg(long, default_value = "none")]
        catch_up: String,
        /// Print the server's answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the schedules.
    Ls {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show a schedule and its last ticks.
    Show {
        /// The schedule's name.
        name: String,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Stop a schedule's ticks until it is resumed (ticks meanwhile do not fire).
    Pause {
        /// The schedule's name.
        name: String,
        /// Print the server's answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Resume a paused schedule from its next tick.
    Resume {
        /// The schedule's name.
        name: String,
        /// Print the server's answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete a schedule; the batches it opened stay.
    Rm {
        /// The schedule's name.
        name: String,
        /// Print the server's answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Open a batch from the schedule's plan now, out of turn.
    RunNow {
        /// The schedule's name.
        name: String,
        /// Print the server's answer as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `GET /v1/schedules/{name}`.
#[derive(Debug, Deserialize, serde::Serialize)]
struct ScheduleView {
    #[serde(flatten)]
    schedule: ScheduleInfo,
    ticks: Vec<Tick>,
    /// Its next ticks (a server before they were shown sends none).
    #[serde(default)]
    next_ticks: Vec<crate::store::Micros>,
}

pub fn run(args: ScheduleArgs) -> anyhow::Result<ExitCode> {
    let client = Client::new(&args.connect)?;
    match args.command {
        ScheduleCommand::Add {
            name,
            cron,
            plan,
            timezone,
            overlap,
            catch_up,
            json: as_json,
        } => {
            let read = Plan::read(&plan)?;
            anyhow::ensure!(
                read.webhook.is_none(),
                "the plan {} has a [webhook]: a schedule's batches have none of their own \
                 (the server's, `qhost serve --webhook`, hears of their ends); remove it from \
                 the plan, or give the server a webhook",
                plan.display()
            );
            let base = plan.parent().unwrap_or(std::path::Path::new("."));
            let mut body = read.batch_json();
            body["tasks"] = read
                .tasks_json(base)
                .with_context(|| format!("in the plan {}", plan.display()))?["tasks"]
                .take();
            let request = json!({
                "name": name,
                "cron": cron,
                "timezone": timezone,
                "plan": body,
                "overlap": overlap,
                "catch_up": catch_up,
            });
            let answer = client.call("POST", "/v1/schedules", Some(&request))?;
            if as_json {
                print_json(&answer)?;
                return Ok(ExitCode::SUCCESS);
            }
            let created: ScheduleInfo = serde_json::from_value(answer)?;
            outln!(
                "schedule {}: next tick {}",
                created.name,
                created.next_due.map(when).unwrap_or_else(|| "never".into())
            )?;
        }
        ScheduleCommand::Ls { json } => {
            #[derive(Deserialize, serde::Serialize)]
            struct List {
                schedules: Vec<ScheduleInfo>,
            }
            let list: List = client.get("/v1/schedules")?;
            if json {
                print_json(&list.schedules)?;
                return Ok(ExitCode::SUCCESS);
            }
            let rows: Vec<Vec<String>> = list
                .schedules
                .iter()
                .map(|s| {
                    vec![
                        s.name.clone(),
                        s.cron.clone(),
                        s.timezone.clone(),
                        if s.paused {
                            "paused".into()
                        } else {
                            "active".into()
                        },
                        s.next_due.map(time).unwrap_or_else(|| "-".into()),
                        s.last_batch
                            .map(|b| b.to_string())
                            .unwrap_or_else(|| "-".into()),
                    ]
                })
                .collect();
            print_table(
                &["NAME", "CRON", "ZONE", "STATE", "NEXT", "LAST BATCH"],
                &rows,
            )?;
        }
        ScheduleCommand::Show { name, json } => {
            let view: ScheduleView = client.get(&format!("/v1/schedules/{}", encode(&name)))?;
            if json {
                print_json(&view)?;
                return Ok(ExitCode::SUCCESS);
            }
            let s = &view.schedule;
            outln!("schedule {}", s.name)?;
            outln!("  cron      {} ({})", s.cron, s.timezone)?;
            outln!("  state     {}", if s.paused { "paused" } else { "active" })?;
            outln!("  overlap   {}", s.overlap)?;
            outln!("  catch-up  {}", s.catch_up)?;
            outln!(
                "  next      {}",
                s.next_due.map(when).unwrap_or_else(|| "never".into())
            )?;
            for later in view.next_ticks.iter().skip(1) {
                outln!("  then      {}", when(*later))?;
            }
            outln!("  missed    {}", s.missed)?;
            for tick in &view.ticks {
                outln!(
                    "  tick {}: {}{}{}",
                    when(tick.due_at),
                    tick.result.as_str(),
                    tick.batch
                        .map(|b| format!(", batch {b}"))
                        .unwrap_or_default(),
                    tick.detail
                        .as_deref()
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default()
                )?;
            }
        }
        ScheduleCommand::Pause { name, json } => action(&client, &name, "pause", json)?,
        ScheduleCommand::Resume { name, json } => action(&client, &name, "resume", json)?,
        ScheduleCommand::RunNow { name, json } => {
            let answer = client.call(
                "POST",
                &format!("/v1/schedules/{}/run", encode(&name)),
                None,
            )?;
            if json {
                print_json(&answer)?;
                return Ok(ExitCode::SUCCESS);
            }
            let tick: Tick = serde_json::from_value(answer)?;
            match tick.batch {
                Some(batch) => outln!("schedule {name}: opened batch {batch}")?,
                None => outln!(
                    "schedule {name}: {}{}",
                    tick.result.as_str(),
                    tick.detail.map(|d| format!(": {d}")).unwrap_or_default()
                )?,
            }
        }
        ScheduleCommand::Rm { name, json } => {
            let answer =
                client.call("DELETE", &format!("/v1/schedules/{}", encode(&name)), None)?;
            if json {
                let removed = json!({ "schedule": name, "removed": true });
                print_json(if answer.is_null() { &removed } else { &answer })?;
                return Ok(ExitCode::SUCCESS);
            }
            outln!("schedule {name} removed")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn action(client: &Client, name: &str, what: &str, json: bool) -> anyhow::Result<()> {
    let answer = client.call(
        "POST",
        &format!("/v1/schedules/{}/{what}", encode(name)),
        None,
    )?;
    if json {
        return print_json(&answer);
    }
    let info: ScheduleInfo = serde_json::from_value(answer)?;
    let state = if info.paused { "paused" } else { "active" };
    outln!("schedule {}: {state}", info.name)?;
    Ok(())
}
