//! `qhost submit`: one task, alone in a batch of its own or into a batch named by its
//! handle; with `--wait`, its output once it has ended.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use base64::Engine as _;
use clap::Args;
use serde_json::{Value, json};

use super::EXIT_TASK_FAILED;
use super::client::{BatchRef, Client, ConnectArgs, print_json};
use crate::store::{TaskId, TaskInfo, TaskState};

#[derive(Debug, Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// The module to run: its name, its digest, or the start of its digest as `module ls`
    /// shows it.
    #[arg(long)]
    pub module: String,
    /// The input, as text.
    #[arg(long, conflicts_with_all = ["input_file", "input_json"])]
    pub input: Option<String>,
    /// The input, read from a file.
    #[arg(long, conflicts_with = "input_json")]
    pub input_file: Option<PathBuf>,
    /// The input, as JSON (checked here, sent as its compact text).
    #[arg(long)]
    pub input_json: Option<String>,
    /// No task of this order starts before every lower order of its batch has ended.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub order: i64,
    /// At most the group's limit of tasks with this key run at once.
    #[arg(long)]
    pub group: Option<String>,
    /// Higher runs first (default: the batch's priority).
    #[arg(long, allow_negative_numbers = true)]
    pub priority: Option<i32>,
    /// Tokens the task spends of its group's rate (default 1; needs `--group`).
    #[arg(long, requires = "group")]
    pub cost: Option<u32>,
    /// Attempts before the task fails for good.
    #[arg(long)]
    pub max_attempts: Option<u32>,
    /// Wall-clock limit per attempt, e.g. `30s`.
    #[arg(long)]
    pub timeout: Option<String>,
    /// Linear memory limit, e.g. `64MiB`.
    #[arg(long)]
    pub memory: Option<String>,
    /// Not due before this time (RFC 3339, e.g. `2026-11-24T09:00:00Z`).
    #[arg(long, conflicts_with = "delay")]
    pub run_at: Option<String>,
    /// Not due before this long from now, e.g. `90s`.
    #[arg(long)]
    pub delay: Option<String>,
    /// Add the task to this batch (its handle, or its id with the admin token) instead of
    /// a batch of its own.
    #[arg(long, value_name = "HANDLE")]
    pub batch: Option<BatchRef>,
    /// Wait until the task has ended, print its output, and exit 1 unless it succeeded.
    #[arg(long)]
    pub wait: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// A task's input, as a submission carries it.
pub enum Input {
    None,
    Text(String),
    Bytes(Vec<u8>),
    Json(Value),
}

/// One task of a submission request.
pub struct TaskFields {
    pub module: String,
    pub input: Input,
    pub order: i64,
    pub group: Option<String>,
    pub priority: Option<i32>,
    pub max_attempts: Option<u32>,
    pub timeout: Option<String>,
    pub memory: Option<String>,
    /// An RFC 3339 time the task is not due before.
    pub run_at: Option<String>,
    /// How long after submission the task is due.
    pub delay: Option<String>,
    /// Its key in its batch, the tasks it runs after (as the API takes `after`) and what
    /// their failure does to it: a plan's graph.
    pub key: Option<String>,
    pub after: Option<Value>,
    pub on_failure: Option<String>,
    /// Tokens it spends of its group's rate.
    pub cost: Option<u32>,
}

impl TaskFields {
    /// The task as the API's JSON.
    pub fn to_json(&self) -> Value {
        let mut task = json!({ "module": self.module, "order": self.order });
        match &self.input {
            Input::None => {}
            Input::Text(text) => task["input"] = json!(text),
            Input::Bytes(bytes) => {
                task["input_base64"] =
                    json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            }
            Input::Json(value) => task["input_json"] = value.clone(),
        }
        if let Some(group) = &self.group {
            task["group"] = json!(group);
        }
        if let Some(priority) = self.priority {
            task["priority"] = json!(priority);
        }
        if let Some(attempts) = self.max_attempts {
            task["max_attempts"] = json!(attempts);
        }
        if let Some(timeout) = &self.timeout {
            task["timeout"] = json!(timeout);
        }
        if let Some(memory) = &self.memory {
            task["memory"] = json!(memory);
        }
        if let Some(at) = &self.run_at {
            task["run_at"] = json!(at);
        }
        if let Some(delay) = &self.delay {
            task["delay"] = json!(delay);
        }
        if let Some(key) = &self.key {
            task["key"] = json!(key);
        }
        if let Some(after) = &self.after {
            task["after"] = after.clone();
        }
        if let Some(policy) = &self.on_failure {
            task["on_failure"] = json!(policy);
        }
        if let Some(cost) = self.cost {
            task["cost"] = json!(cost);
        }
        task
    }
}

pub fn run(args: SubmitArgs) -> anyhow::Result<ExitCode> {
    let client = Client::new(&args.connect)?;
    let input = match (&args.input, &args.input_file, &args.input_json) {
        (Some(text), _, _) => Input::Text(text.clone()),
        (_, Some(path), _) => Input::Bytes(
            std::fs::read(path).with_context(|| format!("reading {}", path.display()))?,
        ),
        (_, _, Some(text)) => {
            Input::Json(serde_json::from_str(text).context("--input-json is not JSON")?)
        }
        _ => Input::None,
    };
    let task = TaskFields {
        module: args.module,
        input,
        order: args.order,
        group: args.group,
        priority: args.priority,
        max_attempts: args.max_attempts,
        timeout: args.timeout,
        memory: args.memory,
        run_at: args.run_at,
        delay: args.delay,
        key: None,
        after: None,
        on_failure: None,
        cost: args.cost,
    }
    .to_json();
    let (task_id, batch, answer) = match &args.batch {
        None => {
            // Sent again if it does not get through, and done once.
            let answer = client.call_once("POST", "/v1/tasks", &task)?;
            let task_id = answer["task"]
                .as_i64()
                .context("the answer has no task id")?;
            let batch: BatchRef = answer["handle"]
                .as_str()
                .context("the answer has no handle")?
                .parse()
                .map_err(|e: String| anyhow::anyhow!(e))?;
            (task_id, batch, answer)
        }
        Some(batch) => {
            let answer = batch.client(&client).call_once(
                "POST",
                &format!("/v1/batches/{}/tasks", batch.id),
                &json!({ "tasks": [task] }),
            )?;
            let task_id = answer["tasks"][0]
                .as_i64()
                .context("the answer has no task id")?;
            let answer = json!({ "task": task_id, "batch": batch.id });
            (task_id, batch.clone(), answer)
        }
    };
    if !args.wait {
        if args.json {
            print_json(&answer)?;
        } else {
            outln!("task {task_id} in batch {}", batch.id)?;
            if let Some(handle) = answer["handle"].as_str() {
                outln!("handle {handle}")?;
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let client = batch.client(&client);
    let info = wait_task(&client, batch.id, task_id)?;
    if args.json {
        let view: Value = client.get(&format!("/v1/tasks/{task_id}"))?;
        print_json(&view)?;
    } else if info.state == TaskState::Succeeded {
        let output = client.get_bytes(&format!("/v1/tasks/{task_id}/output"))?;
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(&output)?;
        if !output.ends_with(b"\n") {
            stdout.write_all(b"\n")?;
        }
    } else {
        errln!("{}", ended_line(&info));
    }
    Ok(if info.state == TaskState::Succeeded {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_TASK_FAILED)
    })
}

/// Follows the batch's events until this task has ended (or the batch has), then returns
/// the task.
pub fn wait_task(client: &Client, batch: i64, task: TaskId) -> anyhow::Result<TaskInfo> {
    let path = format!("/v1/tasks/{task}");
    for event in client.events(&format!("/v1/batches/{batch}/events"))? {
        let (name, data) = event?;
        if name == "end" {
            break;
        }
        if name == "task" {
            let info: TaskInfo = serde_json::from_str(&data)
                .with_context(|| format!("an event the client does not know: {data}"))?;
            if info.id == task {
                return Ok(info);
            }
        }
    }
    let info: TaskInfo = client.get(&path)?;
    anyhow::ensure!(
        info.state.is_ended(),
        "the event stream of batch {batch} ended before task {task} did"
    );
    Ok(info)
}

/// One line about a task that did not succeed.
pub fn ended_line(info: &TaskInfo) -> String {
    let mut line = format!("task {} {}", info.id, info.state.as_str());
    if let Some(outcome) = info.outcome {
        line.push_str(&format!(" ({})", outcome.as_str()));
    }
    if let Some(error) = &info.error {
        line.push_str(&format!(": {error}"));
    }
    line
}
