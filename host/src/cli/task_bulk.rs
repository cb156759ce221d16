//! `qhost task cancel|retry|priority`: on one task, or on the tasks a filter names
//! (`POST /v1/tasks/cancel|retry`, `PUT /v1/tasks/priority`), printing what changed.

use clap::Args;
use serde_json::json;

use super::client::Client;
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
        (!pairs.is_empty()).then(|| pairs.join("&"))
    }

    fn is_empty(&self) -> bool {
        self.query(None).is_none()
    }
}

fn refuse() -> anyhow::Error {
    anyhow::anyhow!("name a task or a filter (--batch, --group, --outcome)")
}

pub fn cancel(client: &Client, task: Option<TaskId>, filter: Filter) -> anyhow::Result<()> {
    if let (Some(task), true) = (task, filter.is_empty()) {
        let answer = client.call("POST", &format!("/v1/tasks/{task}/cancel"), None)?;
        outln!(
            "task {task}: {}",
            answer["result"].as_str().unwrap_or_default()
        )?;
        return Ok(());
    }
    let query = filter.query(task).ok_or_else(refuse)?;
    let answer = client.call("POST", &format!("/v1/tasks/cancel?{query}"), None)?;
    outln!(
        "cancelled {}, stopping {}",
        answer["cancelled"].as_u64().unwrap_or_default(),
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
        outln!(
            "task {task}: {}, attempts {} of {}",
            info.state.as_str(),
            info.attempts,
            info.max_attempts
        )?;
        return Ok(());
    }
    let query = filter.query(task).ok_or_else(refuse)?;
    let answer = client.call("POST", &format!("/v1/tasks/retry?{query}"), None)?;
    outln!("retried {}", answer["retried"].as_u64().unwrap_or_default())?;
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
        outln!("task {task}: priority {priority}")?;
        return Ok(());
    }
    let query = filter.query(task).ok_or_else(refuse)?;
    let answer = client.call("PUT", &format!("/v1/tasks/priority?{query}"), Some(&body))?;
    outln!("changed {}", answer["changed"].as_u64().unwrap_or_default())?;
    Ok(())
}
