//! What a client asks for a task, as sent ([`TaskRequest`]), and the task spec it makes:
//! its module reference resolved (see [`module_ref`]), its durations and sizes read, its
//! limits filled from the server's defaults (for a tenant's batch, each at most the
//! tenant's maximum). Submissions and schedules' plans read the same
//! requests the same way.

use std::collections::HashMap;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Error, Result, Scheduler, module_ref};
use crate::runtime::{Digest, MountGrant, TaskLimits};
use crate::store::{Dep, DepRef, OnFailure, TaskSpec, TenantId, now_micros};
use crate::units::{parse_bytes, parse_duration, parse_time};
use crate::whole;

/// One task of a submission. Its input is at most one of `input` (text), `input_base64`
/// and `input_json`; none gives it an empty input.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskRequest {
    /// A module's name, its digest, or the start of its digest (at least 6 hex digits).
    pub module: String,
    /// The input as text.
    pub input: Option<String>,
    /// The input as bytes, in standard base64 with padding.
    #[schema(
        pattern = "^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$",
        content_encoding = "base64"
    )]
    pub input_base64: Option<String>,
    /// The input as a JSON value, which the task receives serialized.
    #[schema(value_type = Option<Value>)]
    pub input_json: Option<serde_json::Value>,
    /// Its place in the batch's order: no task starts before every task of a lower
    /// order in its batch has ended.
    #[serde(default, deserialize_with = "whole::int")]
    pub order: i64,
    /// At most the group's limit of tasks of a group run at once, across batches.
    #[schema(min_length = 1, max_length = 200)]
    pub group: Option<String>,
    /// Higher first; none: the batch's priority.
    #[serde(default, deserialize_with = "whole::option")]
    pub priority: Option<i32>,
    /// How many times it may run, retries included; none: 3.
    #[serde(default, deserialize_with = "whole::option")]
    #[schema(minimum = 1, maximum = 100)]
    pub max_attempts: Option<u32>,
    /// The delay before the first retry, doubled for each further one: a duration such
    /// as `500ms`, at most `1h`; none: `1s`.
    pub backoff: Option<String>,
    /// The longest one attempt may run: a duration such as `30s`, within the server's
    /// maximum; none: the server's default.
    pub timeout: Option<String>,
    /// Its memory limit: a size such as `64MiB`, at least `64KiB`, within the server's
    /// maximum; none: the server's default.
    pub memory: Option<String>,
    /// Mounts of the server's the task may use.
    #[serde(default)]
    pub mounts: Vec<MountGrant>,
    /// Outbound HTTP requests one attempt may make, refused ones included, within the
    /// server's maximum; none: 100.
    #[serde(default, deserialize_with = "whole::option")]
    #[schema(minimum = 0, maximum = 10000)]
    pub http_requests: Option<u32>,
    /// Request body bytes one attempt may send over HTTP: a size such as `1MiB`, within
    /// the server's maximum; none: `1MiB`.
    pub http_sent: Option<String>,
    /// Response body bytes one attempt may receive over HTTP: a size such as `16MiB`,
    /// within the server's maximum; none: `16MiB`.
    pub http_received: Option<String>,
    /// The longest one HTTP request may take, to the end of its response: a duration
    /// such as `30s`, within the server's maximum; none: `30s`.
    pub http_timeout: Option<String>,
    /// Not due before this RFC 3339 time, such as `2026-11-24T09:00:00Z`.
    pub run_at: Option<String>,
    /// Not due before this long after submission, such as `90s`.
    pub delay: Option<String>,
    /// Its name in its batch (1 to 200 characters, unique there), by which other tasks
    /// name it in `after`.
    #[schema(min_length = 1, max_length = 200)]
    pub key: Option<String>,
    /// The tasks of its batch it runs after: it is ready once each has ended, and reads
    /// their outputs (`qhost:task/graph`). A list whose items are a key (text), a task id
    /// (a number), or `{"task": key or id, "on_failure": "cancel" | "run" | "skip"}`; or
    /// `"*"`: every other task of its batch, those submitted later too (a fan-in).
    #[schema(value_type = Option<Value>)]
    pub after: Option<serde_json::Value>,
    /// What a task it runs after that did not succeed does to it, unless its edge says:
    /// `cancel` it (the default), `run` it anyway, or `skip` it (it ends with outcome
    /// `skipped`, and tasks after it run as if it had succeeded).
    pub on_failure: Option<OnFailure>,
    /// Tokens it spends of its group's rate (1 to 1000000; none: 1). It is claimed once
    /// its group has a token, and overdraws what it lacks: the group's next tasks wait
    /// until the rate has paid it back. Only a task with a group has a cost.
    #[serde(default, deserialize_with = "whole::option")]
    #[schema(minimum = 1, maximum = 1000000)]
    pub cost: Option<u32>,
}

/// The dependencies `after` names, or whether it is `"*"`.
fn read_after(after: serde_json::Value) -> Result<(Vec<Dep>, bool), String> {
    use serde_json::Value;
    let name = |value: &Value| -> Result<DepRef, String> {
        match value {
            Value::String(key) => Ok(DepRef::Key(key.clone())),
            Value::Number(n) => n
                .as_i64()
                .filter(|id| *id > 0)
                .map(DepRef::Task)
                .ok_or_else(|| format!("{n} is not a task id")),
            other => Err(format!("{other} is neither a key nor a task id")),
        }
    };
    let items = match after {
        Value::String(star) if star == "*" => return Ok((Vec::new(), true)),
        Value::Array(items) => items,
        other => {
            return Err(format!(
                "{other} is neither \"*\" nor a list of keys, task ids and \
                 {{\"task\": ..., \"on_failure\": ...}}"
            ));
        }
    };
    let mut deps = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let Value::Object(edge) = item else {
            let on = name(item).map_err(|e| format!("item {index}: {e}"))?;
            deps.push(Dep {
                on,
                on_failure: None,
            });
            continue;
        };
        if let Some(unknown) = edge
            .keys()
            .find(|k| !["task", "on_failure"].contains(&k.as_str()))
        {
            return Err(format!(
                "item {index}: unknown field `{unknown}`; expected `task` or `on_failure`"
            ));
        }
        let on = edge
            .get("task")
            .ok_or_else(|| format!("item {index}: field `task` is missing"))?;
        let on_failure = match edge.get("on_failure") {
            None | Some(Value::Null) => None,
            Some(policy) => Some(serde_json::from_value(policy.clone()).map_err(|_| {
                format!(
                    "item {index}: `on_failure` is {policy}; expected \"cancel\", \"run\" \
                     or \"skip\""
                )
            })?),
        };
        deps.push(Dep {
            on: name(on).map_err(|e| format!("item {index}: {e}"))?,
            on_failure,
        });
    }
    Ok((deps, false))
}

impl Scheduler {
    /// The specs of a submission's tasks, their modules resolved, for a batch of `tenant`
    /// (none: the admin's); a request it cannot read is refused as
    /// [`Error::BadRequest`], naming the task and field.
    pub async fn task_specs(
        &self,
        tenant: Option<TenantId>,
        tasks: Vec<TaskRequest>,
    ) -> Result<Vec<TaskSpec>> {
        let defaults = self.task_defaults(tenant).await?;
        let modules = self.resolve_modules(&tasks).await?;
        let mut specs = Vec::with_capacity(tasks.len());
        for (index, task) in tasks.into_iter().enumerate() {
            let spec = self
                .task_spec(task, &modules, &defaults)
                .map_err(|e| Error::BadRequest(format!("task {index}: {e}")))?;
            specs.push(spec);
        }
        Ok(specs)
    }

    /// The spec of one task submitted alone: a refusal names the field only.
    pub async fn task_spec_alone(
        &self,
        tenant: Option<TenantId>,
        task: TaskRequest,
    ) -> Result<TaskSpec> {
        let defaults = self.task_defaults(tenant).await?;
        let modules = self.resolve_modules(std::slice::from_ref(&task)).await?;
        self.task_spec(task, &modules, &defaults)
            .map_err(Error::BadRequest)
    }

    /// The digest each module reference of a submission names (see [`module_ref`]), or
    /// why it names none. The modules are listed only when a reference is not a whole
    /// digest.
    async fn resolve_modules(
        &self,
        tasks: &[TaskRequest],
    ) -> Result<HashMap<String, Result<Digest, String>>> {
        let mut resolved: HashMap<String, Result<Digest, String>> = HashMap::new();
        let mut names = Vec::new();
        for task in tasks {
            if resolved.contains_key(&task.module) {
                continue;
            }
            match Digest::from_hex(&task.module) {
                Ok(digest) => resolved.insert(task.module.clone(), Ok(digest)),
                Err(_) => resolved.insert(task.module.clone(), Err(String::new())),
            };
            if resolved[&task.module].is_err() {
                names.push(task.module.clone());
            }
        }
        if names.is_empty() {
            return Ok(resolved);
        }
        // Names, each by its key; only what names no module (a digest's start, a typo)
        // needs the whole list, to resolve it or say what is near.
        for (name, digest) in self.store.module_lookup(names).await? {
            resolved.insert(name, Ok(digest));
        }
        if resolved.values().any(Result::is_err) {
            let modules = self.module_list().await?;
            for (reference, found) in resolved.iter_mut().filter(|(_, f)| f.is_err()) {
                *found = module_ref::find(reference, &modules).map(|named| named.digest());
            }
        }
        Ok(resolved)
    }

    fn task_spec(
        &self,
        task: TaskRequest,
        modules: &HashMap<String, Result<Digest, String>>,
        defaults: &TaskLimits,
    ) -> Result<TaskSpec, String> {
        let module = modules[&task.module]
            .clone()
            .map_err(|e| format!("field `module`: {e}"))?;
        let input = match (task.input, task.input_base64, task.input_json) {
            (Some(text), None, None) => text.into_bytes(),
            (None, Some(b64), None) => base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| format!("field `input_base64`: {e}"))?,
            (None, None, Some(json)) => serde_json::to_vec(&json).expect("JSON serializes"),
            (None, None, None) => Vec::new(),
            _ => return Err("give at most one of `input`, `input_base64` and `input_json`".into()),
        };
        let mut limits = *defaults;
        if let Some(timeout) = task.timeout {
            limits.timeout =
                parse_duration(&timeout).map_err(|e| format!("field `timeout`: {e}"))?;
        }
        if let Some(memory) = task.memory {
            limits.memory = parse_bytes(&memory).map_err(|e| format!("field `memory`: {e}"))?;
        }
        if let Some(requests) = task.http_requests {
            limits.http_requests = requests;
        }
        if let Some(sent) = task.http_sent {
            limits.http_sent = parse_bytes(&sent).map_err(|e| format!("field `http_sent`: {e}"))?;
        }
        if let Some(received) = task.http_received {
            limits.http_received =
                parse_bytes(&received).map_err(|e| format!("field `http_received`: {e}"))?;
        }
        if let Some(timeout) = task.http_timeout {
            limits.http_timeout =
                parse_duration(&timeout).map_err(|e| format!("field `http_timeout`: {e}"))?;
        }
        let mut spec = TaskSpec::new(module, input);
        if let Some(after) = task.after {
            (spec.after, spec.fan_in) =
                read_after(after).map_err(|e| format!("field `after`: {e}"))?;
        }
        spec.key = task.key;
        spec.on_failure = task.on_failure.unwrap_or_default();
        spec.cost = task.cost.unwrap_or(1);
        spec.order = task.order;
        spec.group = task.group;
        spec.priority = task.priority;
        spec.limits = limits;
        spec.mounts = task.mounts;
        if let Some(attempts) = task.max_attempts {
            spec.max_attempts = attempts;
        }
        if let Some(backoff) = task.backoff {
            spec.backoff = parse_duration(&backoff).map_err(|e| format!("field `backoff`: {e}"))?;
        }
        spec.not_before = match (task.run_at, task.delay) {
            (None, None) => None,
            (Some(at), None) => Some(parse_time(&at).map_err(|e| format!("field `run_at`: {e}"))?),
            (None, Some(delay)) => {
                let delay = parse_duration(&delay).map_err(|e| format!("field `delay`: {e}"))?;
                let delay = i64::try_from(delay.as_micros()).unwrap_or(i64::MAX);
                Some(now_micros().saturating_add(delay))
            }
            (Some(_), Some(_)) => return Err("give at most one of `run_at` and `delay`".into()),
        };
        Ok(spec)
    }
}
