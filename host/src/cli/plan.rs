//! The plan file `qhost batch submit` reads: batch settings and `[[task]]` tables, in TOML.
//!
//! ```toml
//! name = "nightly"        # optional batch settings: name, priority, max_parallel,
//! priority = 5            # failure_policy ("continue" or "halt")
//!
//! [[task]]
//! module = "sha256"       # a module's name, digest, or the start of its digest
//! input = "200000 qhost"  # or input_file = "path" (relative to the plan), or
//! order = 1               # input_json = { any = "TOML value" }
//! group = "hashing"
//! key = "hash"            # its name in the batch; after = ["fetch"] runs it after the
//!                         # task keyed "fetch" (or after = "*": after every other task)
//!
//! [webhook]               # optional: the batch's end and its tasks' final failures
//! url = "https://hooks.example.com/qhost"   # are posted here, signed with the secret
//! secret_file = "hook-secret"               # read from a file (relative to the plan)
//! # secret_env = "HOOK_SECRET"              # or from the environment
//! ```
//!
//! Unknown keys are refused, with the key named.

use std::path::Path;

use anyhow::Context;
use serde::Deserialize;
use serde_json::{Value, json};

use super::submit::{Input, TaskFields};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub name: Option<String>,
    pub priority: Option<i32>,
    pub max_parallel: Option<u32>,
    pub failure_policy: Option<String>,
    /// Where the batch's end and its tasks' final failures are posted (`batch submit`
    /// only: a schedule's batches are heard by the server's webhook).
    pub webhook: Option<PlanWebhook>,
    #[serde(default, rename = "task")]
    pub tasks: Vec<PlanTask>,
}

/// A plan's `[webhook]`: its URL, and where its secret is read, never the secret itself,
/// so that a plan can be shared and kept in version control.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanWebhook {
    pub url: String,
    pub secret_file: Option<String>,
    pub secret_env: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanTask {
    pub module: String,
    pub input: Option<String>,
    pub input_file: Option<String>,
    pub input_json: Option<toml::Value>,
    #[serde(default)]
    pub order: i64,
    pub group: Option<String>,
    pub priority: Option<i32>,
    pub max_attempts: Option<u32>,
    pub timeout: Option<String>,
    pub memory: Option<String>,
    /// A TOML date-time with an offset, or RFC 3339 text.
    pub run_at: Option<toml::Value>,
    pub delay: Option<String>,
    /// Its name in the batch, by which other tasks name it in `after`.
    pub key: Option<String>,
    /// The tasks it runs after: keys, task ids, `{ task = "key", on_failure = "run" }`
    /// tables, or `"*"` (every other task of the batch).
    pub after: Option<toml::Value>,
    /// `cancel` (the default), `run` or `skip`: what a dependency's failure does to it.
    pub on_failure: Option<String>,
    /// Tokens it spends of its group's rate (default 1).
    pub cost: Option<u32>,
}

impl Plan {
    pub fn read(path: &Path) -> anyhow::Result<Plan> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let plan: Plan =
            toml::from_str(&text).with_context(|| format!("in the plan {}", path.display()))?;
        anyhow::ensure!(
            !plan.tasks.is_empty(),
            "the plan {} has no [[task]]",
            path.display()
        );
        Ok(plan)
    }

    /// The body of `POST /v1/batches` for this plan's batch settings.
    pub fn batch_json(&self) -> Value {
        let mut batch = json!({});
        if let Some(name) = &self.name {
            batch["name"] = json!(name);
        }
        if let Some(priority) = self.priority {
            batch["priority"] = json!(priority);
        }
        if let Some(max) = self.max_parallel {
            batch["max_parallel"] = json!(max);
        }
        if let Some(policy) = &self.failure_policy {
            batch["failure_policy"] = json!(policy);
        }
        batch
    }

    /// The `webhook` of `POST /v1/batches`, with its secret read from where the plan says
    /// (a file relative to `base`, or a variable); none when the plan has none.
    pub fn webhook_json(&self, base: &Path) -> anyhow::Result<Option<Value>> {
        let Some(hook) = &self.webhook else {
            return Ok(None);
        };
        let secret = match (&hook.secret_file, &hook.secret_env) {
            (Some(file), None) => {
                let path = base.join(file);
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("webhook: reading secret_file {}", path.display()))?;
                text.trim_end_matches(['\n', '\r']).to_owned()
            }
            (None, Some(name)) => std::env::var(name).map_err(|_| {
                anyhow::anyhow!("webhook: secret_env names `{name}`, which is not set")
            })?,
            _ => anyhow::bail!(
                "webhook: give one of `secret_file` (a file holding the secret) and \
                 `secret_env` (a variable holding it)"
            ),
        };
        Ok(Some(json!({ "url": hook.url, "secret": secret })))
    }

    /// The body of `POST /v1/batches/{id}/tasks`; input files are read relative to `base`.
    pub fn tasks_json(&self, base: &Path) -> anyhow::Result<Value> {
        let mut tasks = Vec::with_capacity(self.tasks.len());
        for (index, task) in self.tasks.iter().enumerate() {
            let input = match (&task.input, &task.input_file, &task.input_json) {
                (None, None, None) => Input::None,
                (Some(text), None, None) => Input::Text(text.clone()),
                (None, Some(file), None) => {
                    let path = base.join(file);
                    Input::Bytes(std::fs::read(&path).with_context(|| {
                        format!("task {index}: reading input_file {}", path.display())
                    })?)
                }
                (None, None, Some(value)) => Input::Json(
                    serde_json::to_value(value)
                        .with_context(|| format!("task {index}: input_json"))?,
                ),
                _ => anyhow::bail!(
                    "task {index}: give at most one of `input`, `input_file` and `input_json`"
                ),
            };
            let fields = TaskFields {
                module: task.module.clone(),
                input,
                order: task.order,
                group: task.group.clone(),
                priority: task.priority,
                max_attempts: task.max_attempts,
                timeout: task.timeout.clone(),
                memory: task.memory.clone(),
                run_at: match &task.run_at {
                    None => None,
                    Some(toml::Value::String(text)) => Some(text.clone()),
                    Some(toml::Value::Datetime(at)) => Some(at.to_string()),
                    Some(other) => anyhow::bail!(
                        "task {index}: `run_at` is a {}; give a time like 2026-11-24T09:00:00Z",
                        other.type_str()
                    ),
                },
                delay: task.delay.clone(),
                key: task.key.clone(),
                after: match &task.after {
                    None => None,
                    Some(after) => Some(
                        serde_json::to_value(after)
                            .with_context(|| format!("task {index}: after"))?,
                    ),
                },
                on_failure: task.on_failure.clone(),
                cost: task.cost,
            };
            tasks.push(fields.to_json());
        }
        Ok(json!({ "tasks": tasks }))
    }
}
