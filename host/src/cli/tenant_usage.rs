//! `qhost tenant usage [--batch ID]`: what tenants used (every one for the admin, its own
//! for a tenant's token) and where each stands against its budget, or what a batch's
//! ended attempts used.

use super::client::{Client, print_json, when};
use crate::api::usage::UsageList;
use crate::store::{BatchUsage, Budget, BudgetUsed, Micros};

pub fn print(client: &Client, batch: Option<i64>, json: bool) -> anyhow::Result<()> {
    if let Some(batch) = batch {
        let used: BatchUsage = client.get(&format!("/v1/batches/{batch}/usage"))?;
        if json {
            return print_json(&used);
        }
        outln!(
            "batch {}: {} attempts; slot {:.3} s, CPU {:.3} s, memory {:.3} MiB-s, HTTP {}",
            used.batch,
            used.attempts,
            used.slot_micros as f64 / 1e6,
            used.cpu_micros as f64 / 1e6,
            used.memory_mib_seconds,
            bytesize::ByteSize(used.http_bytes)
        )?;
        return Ok(());
    }
    let list: UsageList = client.get("/v1/usage")?;
    if json {
        return print_json(&list.tenants);
    }
    if list.tenants.is_empty() {
        outln!("no tenants")?;
        return Ok(());
    }
    outln!(
        "{:<16}  {:>7}  {:>10}  {:>12}  {:>11}  {:>18}  {:>10}  budget",
        "tenant",
        "running",
        "open",
        "slot_seconds",
        "cpu_seconds",
        "memory_mib_seconds",
        "http_bytes"
    )?;
    for t in &list.tenants {
        outln!(
            "{:<16}  {:>7}  {:>10}  {:>12.3}  {:>11.3}  {:>18.3}  {:>10}  {}",
            t.tenant,
            t.running,
            t.open,
            t.slot_micros as f64 / 1e6,
            t.cpu_micros as f64 / 1e6,
            t.memory_mib_seconds,
            t.http_bytes,
            budget_text(t.budget, t.budget_used, t.held_until)
        )?;
    }
    Ok(())
}

/// A tenant's budget in words: `none`, or what each meter used of what per period
/// (`CPU 1.250s of 10s, HTTP 2.0 MB of 100.0 MB per 1h`), and `spent: its tasks wait, in
/// 12 min (TIME)` while it is held.
pub(super) fn budget_text(
    budget: Option<Budget>,
    used: BudgetUsed,
    held_until: Option<Micros>,
) -> String {
    let Some(budget) = budget else {
        return "none".to_owned();
    };
    let mut meters = Vec::new();
    if let Some(cpu) = budget.cpu {
        meters.push(format!(
            "CPU {:.3}s of {}",
            used.cpu_micros as f64 / 1e6,
            humantime::format_duration(cpu)
        ));
    }
    if let Some(memory) = budget.memory_mib_seconds {
        meters.push(format!(
            "memory {:.3} of {memory} MiB-s",
            used.memory_mib_seconds
        ));
    }
    if let Some(http) = budget.http_bytes {
        meters.push(format!(
            "HTTP {} of {}",
            bytesize::ByteSize(used.http_bytes),
            bytesize::ByteSize(http)
        ));
    }
    let mut text = format!(
        "{} per {}",
        meters.join(", "),
        humantime::format_duration(budget.period)
    );
    if let Some(until) = held_until {
        text.push_str(&format!(" (spent: its tasks wait, {})", when(until)));
    }
    text
}
