//! `qhost task cancel|retry|priority`: on one task, or on the tasks a filter names
//! (`POST /v1/tasks/cancel|retry`, `PUT /v1/tasks/priority`), printing what changed, in
//! words or as the server's JSON answer.

use clap::Args;
use serde_json::json;

use super::client::{Client, count, print_json};
use super::module::encode;
use crate::store::{TaskId, TaskInfo};

/// The tasks a bulk action reaches: those that match every filter given.
#[derive(Debug, Args)]
pub struct Filter {
    /// Every task of this batch (required with a batch handle).
    #[arg(long)]
    pub batch: Option<i64>,
    /// Only this group's tasks.
    #[arg(long)]
    pub group: Option<String>,
    /// Only tasks that ended so: outcomes, comma-separated (`trap,lost`; `cancelled` too).
    #[arg(long)]
    pub outcome: Option<String>,
    /// Only tasks in these states, comma-separated (`failed`; `waiting,ready`).
    #[arg(long)]
    pub state: Option<String>,
    /// Only tasks of this module (a name, or its digest or the start of it).
    #[arg(long)]
    pub module: Option<String>,
    /// Print the server's answer as JSON.
    #[arg(long)]
    pub json: bool,
}

impl Filter {
    /// The query naming `task` and the filter, or none when neither is given.
    fn query(&self, task: Option<TaskId>) -> Option<String> {
        let mut pairs = Vec::new();
        if let Some(task) = task {
            pairs.push(format!("task={task}"));
        }
        if let Some(batch) = self.batch {
            pairs.push(format!("batch={batch}"));
        }
        if let Some(group) = &self.group {
            pairs.push(format!("group={}", encode(group)));
        }
        if let Some(outcome) = &self.outcome {
            pairs.push(format!("outcome={}", encode(outcome)));
        }
        if let Some(state) = &self.state {
            pairs.push(format!("state={}", encode(state)));
        }
        if let Some(module) = &self.module {
            pairs.push(format!("module={}", encode(module)));
        }
        (!pairs.is_empty()).then(|| pairs.join("&"))
    }

    fn is_empty(&self) -> bool {
        self.query(None).is_none()
    }
}

fn refuse() -> anyhow::Error {
    anyhow::anyhow!("name a task or a filter (--batch, --group, --outcome, --state, --module)")
}

pub fn cancel(client: &Client, task: Option<TaskId>, filter: Filter) -> anyhow::Result<()> {
    if let (Some(task), true) = (task, filter.is_empty()) {
        let answer = client.call("POST", &format!("/v1/tasks/{task}/cancel"), None)?;
        if filter.json {
            return print_json(&answer);
        }
        let result = answer["result"].as_str().unwrap_or_default();
        outln!("task {task}: {}", result.replace('_', " "))?;
        return Ok(());
    }
    let query = filter.query(task).ok_or_else(refuse)?;
    let answer = client.call("POST", &format!("/v1/tasks/cancel?{query}"), None)?;
    if filter.json {
        return print_json(&answer);
    }
    outln!(
        "{} cancelled, {} asked to stop",
        count(
            answer["cancelled"].as_u64().unwrap_or_default(),
            "task",
            "tasks"
        ),
        answer["stopping"].as_u64().unwrap_or_default()
    )?;
    Ok(())
}

pub fn retry(client: &Client, task: Option<TaskId>, filter: Filter) -> anyhow::Result<()> {
    if let (Some(task), true) = (task, filter.is_empty()) {
        let info: TaskInfo = serde_json::from_value(client.call(
            "POST",
            &format!("/v1/tasks/{task}/retry"),
            None,
        )?)?;
        if filter.json {
            return print_json(&info);
        }
        outln!(
            "task {task}: {}, {} of {}",
            info.state.as_str(),
            count(u64::from(info.attempts), "attempt", "attempts"),
            info.max_attempts
        )?;
        return Ok(());
    }
    let query = filter.query(task).ok_or_else(refuse)?;
    let answer = client.call("POST", &format!("/v1/tasks/retry?{query}"), None)?;
    if filter.json {
        return print_json(&answer);
    }
    let retried = answer["retried"].as_u64().unwrap_or_default();
    outln!("{} to run again", count(retried, "task", "tasks"))?;
    Ok(())
}

/// `values` is `ID N` (a task and its priority) or `N` alone, with a filter.
pub fn priority(client: &Client, values: &[i64], filter: Filter) -> anyhow::Result<()> {
    let (task, priority) = match *values {
        [task, priority] => (Some(task), priority),
        [priority] => (None, priority),
        _ => anyhow::bail!(
            "give a task's id and the priority (`ID N`), or the priority with a filter"
        ),
    };
    let priority = i32::try_from(priority)
        .map_err(|_| anyhow::anyhow!("priority {priority}: out of range for a 32-bit integer"))?;
    let body = json!({ "priority": priority });
    if let (Some(task), true) = (task, filter.is_empty()) {
        client.call("PUT", &format!("/v1/tasks/{task}/priority"), Some(&body))?;
        if filter.json {
            return print_json(&json!({ "task": task, "priority": priority }));
        }
        outln!("task {task}: priority {priority}")?;
        return Ok(());
    }
    let query = filter.query(task).ok_or_else(refuse)?;
    let answer = client.call("PUT", &format!("/v1/tasks/priority?{query}"), Some(&body))?;
    if filter.json {
        return print_json(&answer);
    }
    let changed = answer["changed"].as_u64().unwrap_or_default();
    outln!(
        "{} now at priority {priority}",
        count(changed, "task", "tasks")
    )?;
    Ok(())
}
