//! `qhost batch quota`: what a batch may store and what it stores, and an admin's change
//! of its quotas.

use clap::Args;
use serde_json::{Map, Value, json};

use super::client::{BatchRef, Client, print_json};
use super::serve_quotas::parse;
use crate::store::{BatchInfo, Quotas, Usage};

#[derive(Debug, Args)]
pub struct QuotaArgs {
    /// The batch: its handle, or its id with the admin token (a change needs the admin).
    pub batch: BatchRef,
    /// Tasks it may store: a count, or `off`.
    #[arg(long)]
    pub tasks: Option<String>,
    /// Bytes of input it may store: a size such as `2GiB`, or `off`.
    #[arg(long)]
    pub input_bytes: Option<String>,
    /// Bytes of output it may store: a size, or `off`.
    #[arg(long)]
    pub output_bytes: Option<String>,
    /// Bytes of captured text (errors, logs, stdout, stderr) it may store: a size, or `off`.
    #[arg(long)]
    pub text_bytes: Option<String>,
    /// Children one of its tasks may submit: a count, or `off`.
    #[arg(long)]
    pub children: Option<String>,
    /// How deep its tasks' children may go: a count, or `off`.
    #[arg(long)]
    pub depth: Option<String>,
    /// Print it as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(client: &Client, args: QuotaArgs) -> anyhow::Result<()> {
    let mut change = Map::new();
    for (field, text, count) in [
        ("tasks", &args.tasks, true),
        ("input_bytes", &args.input_bytes, false),
        ("output_bytes", &args.output_bytes, false),
        ("text_bytes", &args.text_bytes, false),
        ("children", &args.children, true),
        ("depth", &args.depth, true),
    ] {
        if let Some(text) = text {
            let quota = parse(text, count)
                .map_err(|e| anyhow::anyhow!("--{}: {e}", field.replace('_', "-")))?;
            change.insert(field.to_owned(), json!(quota));
        }
    }
    let path = format!("/v1/batches/{}", args.batch.id);
    let info: BatchInfo = if change.is_empty() {
        args.batch.client(client).get(&path)?
    } else {
        serde_json::from_value(client.call(
            "PATCH",
            &format!("{path}/quotas"),
            Some(&Value::Object(change)),
        )?)?
    };
    if args.json {
        print_json(&json!({ "batch": info.id, "quotas": info.quotas, "usage": info.usage }))?;
    } else {
        print(&info.quotas, &info.usage)?;
    }
    Ok(())
}

fn print(quotas: &Quotas, usage: &Usage) -> anyhow::Result<()> {
    let bytes = |n: u64| bytesize::ByteSize(n).to_string();
    let row = |name: &str, used: String, quota: Option<String>| {
        outln!(
            "{name:<13} {used:>12} of {}",
            quota.unwrap_or_else(|| "no quota".into())
        )
    };
    row(
        "tasks",
        usage.tasks.to_string(),
        quotas.tasks.map(|q| q.to_string()),
    )?;
    row(
        "input bytes",
        bytes(usage.input_bytes),
        quotas.input_bytes.map(bytes),
    )?;
    row(
        "output bytes",
        bytes(usage.output_bytes),
        quotas.output_bytes.map(bytes),
    )?;
    row(
        "text bytes",
        bytes(usage.text_bytes),
        quotas.text_bytes.map(bytes),
    )?;
    // Bounds on each task, not amounts stored: nothing is used of them.
    let bound = |q: Option<u64>| q.map_or_else(|| "no quota".into(), |q| q.to_string());
    outln!(
        "{:<13} {:>12}    {}",
        "children",
        "per task",
        bound(quotas.children)
    )?;
    outln!(
        "{:<13} {:>12}    {}",
        "depth",
        "at most",
        bound(quotas.depth)
    )?;
    Ok(())
}
