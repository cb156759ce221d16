//! Quotas on what one batch stores: its tasks, the bytes of their inputs, of their outputs
//! and of the text their attempts captured (error, log, stdout, stderr); and on how its
//! tasks grow it: children per task and their depth (checked in `store/spawn.rs`). Both
//! drivers keep a batch's quotas and usage on its row; the rules of what fits are here,
//! stated once.
//!
//! Tasks and input are checked at submission: past a quota the whole submission is
//! refused, naming the quota, and nothing stored changes. Output and text are checked when
//! an attempt ends: an output that does not fit ends the attempt `output-too-large`, and
//! captured text is cut to what is left.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{BatchId, Completion, StoreError, StoreResult, TaskSpec};
use crate::runtime::Outcome;

/// The most a batch may store. Fixed when the batch opens, from the server's defaults
/// unless the opening request says otherwise; an admin may change them later. None: no
/// quota.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Quotas {
    /// Tasks stored in the batch, ended ones included until they are pruned.
    #[schema(required = true)]
    pub tasks: Option<u64>,
    /// Bytes of the inputs of its stored tasks.
    #[schema(required = true)]
    pub input_bytes: Option<u64>,
    /// Bytes of the outputs of its stored tasks.
    #[schema(required = true)]
    pub output_bytes: Option<u64>,
    /// Bytes of the text its attempts captured: errors, log lines, stdout and stderr.
    #[schema(required = true)]
    pub text_bytes: Option<u64>,
    /// Children one of its tasks may submit, over all its attempts.
    #[schema(required = true)]
    pub children: Option<u64>,
    /// How deep children may go: a task a client submitted is at depth 0, its children at 1.
    #[schema(required = true)]
    pub depth: Option<u64>,
}

/// What a batch stores now, counted as its quotas count it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Usage {
    pub tasks: u64,
    pub input_bytes: u64,
    pub output_bytes: u64,
    pub text_bytes: u64,
}

/// A change of a batch's quotas: each field given replaces that quota; `Some(None)`
/// removes it. Read from a JSON object only: serde's derive would take its fields as an
/// array too.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(
    try_from = "serde_json::Map<String, serde_json::Value>",
    deny_unknown_fields
)]
pub struct QuotaChange {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<u64>, minimum = 0, maximum = 9223372036854775807_u64)]
    pub tasks: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<u64>, minimum = 0, maximum = 9223372036854775807_u64)]
    pub input_bytes: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<u64>, minimum = 0, maximum = 9223372036854775807_u64)]
    pub output_bytes: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<u64>, minimum = 0, maximum = 9223372036854775807_u64)]
    pub text_bytes: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<u64>, minimum = 0, maximum = 9223372036854775807_u64)]
    pub children: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<u64>, minimum = 0, maximum = 9223372036854775807_u64)]
    pub depth: Option<Option<u64>>,
}

/// The largest quota: what a database's signed 64-bit column holds.
pub const MAX_QUOTA: u64 = i64::MAX as u64;

impl TryFrom<serde_json::Map<String, serde_json::Value>> for QuotaChange {
    type Error = String;

    /// Each field present: `null` removes that quota, a whole number from 0 to
    /// [`MAX_QUOTA`] sets it. Any other field or value is refused, naming it.
    fn try_from(object: serde_json::Map<String, serde_json::Value>) -> Result<Self, String> {
        let mut change = QuotaChange::default();
        for (field, value) in object {
            let slot = match field.as_str() {
                "tasks" => &mut change.tasks,
                "input_bytes" => &mut change.input_bytes,
                "output_bytes" => &mut change.output_bytes,
                "text_bytes" => &mut change.text_bytes,
                "children" => &mut change.children,
                "depth" => &mut change.depth,
                _ => {
                    return Err(format!(
                        "unknown quota `{field}`: the quotas are `tasks`, `input_bytes`, \
                         `output_bytes`, `text_bytes`, `children` and `depth`"
                    ));
                }
            };
            *slot = Some(match value {
                serde_json::Value::Null => None,
                value => Some(whole(&value).filter(|&n| n <= MAX_QUOTA).ok_or_else(|| {
                    format!(
                        "quota `{field}` is {value}: a quota is a whole number from 0 to \
                         {MAX_QUOTA}, or null for none"
                    )
                })?),
            });
        }
        Ok(change)
    }
}

/// A JSON number that is a whole one at least 0, as `3` or `3.0`.
fn whole(value: &serde_json::Value) -> Option<u64> {
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= MAX_QUOTA as f64)
            .map(|f| f as u64)
    })
}

impl Quotas {
    /// The quotas with `change` applied.
    pub fn changed(self, change: QuotaChange) -> Quotas {
        Quotas {
            tasks: change.tasks.unwrap_or(self.tasks),
            input_bytes: change.input_bytes.unwrap_or(self.input_bytes),
            output_bytes: change.output_bytes.unwrap_or(self.output_bytes),
            text_bytes: change.text_bytes.unwrap_or(self.text_bytes),
            children: change.children.unwrap_or(self.children),
            depth: change.depth.unwrap_or(self.depth),
        }
    }

    /// The quotas' names, in the order of [`Quotas::each`].
    const NAMES: [&str; 6] = [
        "tasks",
        "input_bytes",
        "output_bytes",
        "text_bytes",
        "children",
        "depth",
    ];

    /// Each quota, in the order of [`Quotas::NAMES`].
    fn each(self) -> [Option<u64>; 6] {
        [
            self.tasks,
            self.input_bytes,
            self.output_bytes,
            self.text_bytes,
            self.children,
            self.depth,
        ]
    }

    /// These quotas if none is past `bound`'s (none: no bound); otherwise which one, and
    /// by how much: a tenant's opening may lower the server's defaults, not raise them.
    pub fn within(self, bound: Quotas) -> Result<Quotas, String> {
        let quotas = Self::NAMES.iter().zip(self.each()).zip(bound.each());
        for ((name, asked), most) in quotas {
            let Some(most) = most else { continue };
            match asked {
                Some(asked) if asked <= most => {}
                asked => {
                    let asked = asked.map_or("none".to_owned(), |a| a.to_string());
                    return Err(format!(
                        "field `quotas.{name}`: {asked} is past the server's {most}; a tenant's \
                         batch may lower its quotas, and the admin alone raise them"
                    ));
                }
            }
        }
        Ok(self)
    }

    /// Each quota as a database column holds it: NULL for none, within i64.
    pub(crate) fn columns(self) -> [Option<i64>; 6] {
        self.each()
            .map(|q| q.map(|q| i64::try_from(q).unwrap_or(i64::MAX)))
    }

    /// Quotas from their six columns, in the order of [`Quotas::columns`].
    pub(crate) fn from_columns(c: [Option<i64>; 6]) -> Quotas {
        let q = from_column;
        Quotas {
            tasks: q(c[0]),
            input_bytes: q(c[1]),
            output_bytes: q(c[2]),
            text_bytes: q(c[3]),
            children: q(c[4]),
            depth: q(c[5]),
        }
    }
}

/// A quota from the column that holds it (NULL: none).
pub(crate) fn from_column(column: Option<i64>) -> Option<u64> {
    column.map(|q| q.max(0) as u64)
}

impl Usage {
    /// Usage from its four columns, in the order of the first four of [`Quotas::columns`].
    pub(crate) fn from_columns(c: [i64; 4]) -> Usage {
        Usage {
            tasks: c[0].max(0) as u64,
            input_bytes: c[1].max(0) as u64,
            output_bytes: c[2].max(0) as u64,
            text_bytes: c[3].max(0) as u64,
        }
    }
}

/// What a submission adds to its batch's usage: tasks and bytes of input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Added {
    pub tasks: i64,
    pub input_bytes: i64,
}

/// Checks that `specs` fit in the batch's quotas beside what it stores; refuses the
/// submission, naming the first quota it would pass, otherwise.
pub fn check_submission(
    batch: BatchId,
    quotas: Quotas,
    usage: Usage,
    specs: &[TaskSpec],
) -> StoreResult<Added> {
    let tasks = specs.len() as u64;
    let input: u64 = specs.iter().map(|s| s.input.len() as u64).sum();
    let over =
        |quota: Option<u64>, used: u64, adds: u64| quota.filter(|&q| used.saturating_add(adds) > q);
    if let Some(quota) = over(quotas.tasks, usage.tasks, tasks) {
        return Err(refused(batch, "tasks", quota, usage.tasks, tasks, "tasks"));
    }
    if let Some(quota) = over(quotas.input_bytes, usage.input_bytes, input) {
        return Err(refused(
            batch,
            "input_bytes",
            quota,
            usage.input_bytes,
            input,
            "bytes of input",
        ));
    }
    Ok(Added {
        tasks: tasks as i64,
        input_bytes: input as i64,
    })
}

fn refused(
    batch: BatchId,
    quota: &str,
    limit: u64,
    used: u64,
    adds: u64,
    what: &str,
) -> StoreError {
    StoreError::Quota(format!(
        "batch {batch} is over its `{quota}` quota: it stores {used} {what} and this submission adds \
         {adds}, past the quota of {limit}; nothing was submitted. Prune or release what it holds, \
         or have an admin raise the quota (`qhost batch quota {batch} --{flag} N`, \
         PATCH /v1/batches/{batch}/quotas)",
        flag = quota.replace('_', "-"),
    ))
}

/// What a batch has left for outputs and captured text while its ended attempts are
/// written; None: no quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    pub output_bytes: Option<u64>,
    pub text_bytes: Option<u64>,
}

impl Room {
    /// The room `quotas` leave beside `usage`.
    pub fn left(quotas: Quotas, usage: Usage) -> Room {
        Room {
            output_bytes: quotas
                .output_bytes
                .map(|q| q.saturating_sub(usage.output_bytes)),
            text_bytes: quotas
                .text_bytes
                .map(|q| q.saturating_sub(usage.text_bytes)),
        }
    }

    /// Fits one ended attempt into the room, taking what it keeps from it: an output that
    /// does not fit is not kept and ends the attempt `output-too-large`; captured text is
    /// cut to what is left, stdout first, then stderr, then log lines.
    pub fn fit(&mut self, batch: BatchId, c: &mut Completion) {
        if let (Some(room), Some(size)) = (self.output_bytes, c.output.as_ref().map(Vec::len))
            && size as u64 > room
        {
            c.outcome = Outcome::OutputTooLarge;
            c.output = None;
            c.error = Some(format!(
                "returned {size} bytes of output, past what is left of batch {batch}'s \
                 `output_bytes` quota ({room} bytes); an admin can raise it \
                 (`qhost batch quota {batch} --output-bytes N`)"
            ));
        }
        if let Some(room) = self.output_bytes.as_mut() {
            *room -= c.output.as_ref().map_or(0, |o| o.len() as u64);
        }
        if let Some(room) = self.text_bytes.as_mut() {
            let error = c.error.as_ref().map_or(0, |e| e.len() as u64);
            *room = room.saturating_sub(error);
            for capture in [&mut c.stdout, &mut c.stderr] {
                capture.truncate(usize::try_from(*room).unwrap_or(usize::MAX));
                *room -= capture.len() as u64;
            }
            let mut kept = 0;
            for line in &c.logs {
                let size = line.message.len() as u64;
                if size > *room {
                    break;
                }
                *room -= size;
                kept += 1;
            }
            c.logs.truncate(kept);
        }
    }
}

/// The bytes of captured text an ended attempt stores, as [`Room::fit`] counts them.
pub fn text_bytes(c: &Completion) -> u64 {
    let logs: usize = c.logs.iter().map(|l| l.message.len()).sum();
    (c.error.as_ref().map_or(0, String::len) + c.stdout.len() + c.stderr.len() + logs) as u64
}

/// The bytes of output an ended attempt stores.
pub fn output_bytes(c: &Completion) -> u64 {
    c.output.as_ref().map_or(0, |o| o.len() as u64)
}
