//! `/metrics` in the Prometheus text format: the queue (tasks per state, ended totals, the
//! oldest ready task, busy groups, tenants' running counts) as every node reads it from
//! the store, and this node's slots, measurements by module, and process (memory, files,
//! threads). Reading it costs the same however many tasks ended.
//!
//! It names groups, so it asks for a token (the metrics token, or the admin's), unless
//! served on a listen address of its own (`--metrics-listen`), which the operator keeps
//! where only the scraper reaches it.

use std::fmt::Write as _;

use axum::extract::{FromRequestParts, State};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::response::IntoResponse;

use super::AppState;
use super::auth::{bearer, same_token};
use super::error::{ApiError, ApiResult, ErrorBody};
use crate::scheduler::metrics::label;
use crate::store::{TaskState, TenantInfo, now_micros};

/// Prometheus metrics: the queue (tasks by state, ended totals, the oldest ready task's
/// age, busy groups), slots busy, pool occupancy, the node's claim and run latencies and
/// attempts by outcome, each by module, and the process's memory, files and threads.
#[utoipa::path(
    get,
    path = "/metrics",
    operation_id = "metrics",
    tag = "observe",
    responses(
        (status = 200, description = "The Prometheus text format", content_type = "text/plain", body = String),
        (status = 401, description = "No metrics or admin token (`unauthorized`).", body = ErrorBody),
    ),
    security(("admin_token" = []), ("metrics_token" = [])),
)]
pub async fn metrics(
    State(state): State<AppState>,
    _: MetricsReader,
) -> ApiResult<impl IntoResponse> {
    let stats = state.scheduler.queue_stats().await?;
    let runtime = state.scheduler.runtime();
    let mut text = String::new();
    head(
        &mut text,
        "qhost_build_info",
        "gauge",
        "The qhost version serving, as a label; always 1.",
    );
    let _ = writeln!(
        text,
        "qhost_build_info{{version=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION")
    );
    head(
        &mut text,
        "qhost_tasks",
        "gauge",
        "Tasks in the store by state now (ended ones until they are pruned).",
    );
    let counts = &stats.counts;
    for state in TaskState::ALL {
        let (name, value) = (state.as_str(), counts.of(state));
        let _ = writeln!(text, "qhost_tasks{{state=\"{name}\"}} {value}");
    }
    head(
        &mut text,
        "qhost_tasks_ended_total",
        "counter",
        "Tasks that ended so, counted at each end (a task run again and ended again counts \
         twice); pruning lowers none.",
    );
    let ended = &stats.ended_total;
    for (name, value) in [
        ("succeeded", ended.succeeded),
        ("failed", ended.failed),
        ("cancelled", ended.cancelled),
    ] {
        let _ = writeln!(text, "qhost_tasks_ended_total{{state=\"{name}\"}} {value}");
    }
    head(
        &mut text,
        "qhost_oldest_ready_age_seconds",
        "gauge",
        "Since when the oldest claimable task (ready, due, not paused) was submitted; 0 when \
         none is.",
    );
    let age = stats.oldest_ready_age(now_micros()).unwrap_or(0.0);
    let _ = writeln!(text, "qhost_oldest_ready_age_seconds {age}");
    let groups = &stats.groups;
    let per_group: [(&str, &str, Vec<u64>); 3] = [
        (
            "qhost_group_limit",
            "The limit of each group with tasks ready or claimed (a paused group's: the one it \
             gets back).",
            groups.iter().map(|g| u64::from(g.limit)).collect(),
        ),
        (
            "qhost_group_running",
            "Tasks claimed now per group, for groups with tasks ready or claimed.",
            groups.iter().map(|g| g.running).collect(),
        ),
        (
            "qhost_group_ready",
            "Ready tasks waiting for room per group, for groups with tasks ready or claimed.",
            groups.iter().map(|g| g.ready).collect(),
        ),
    ];
    for (name, help, values) in per_group {
        head(&mut text, name, "gauge", help);
        for (group, value) in groups.iter().zip(values) {
            let _ = writeln!(text, "{name}{{group=\"{}\"}} {value}", label(&group.key));
        }
    }
    // Tenants' counts and slot time, and the limits of those that have one.
    let tenants = state.scheduler.tenant_list().await?;
    type PerTenant = fn(&TenantInfo) -> Option<String>;
    let per_tenant: [(&str, &str, &str, PerTenant); 15] = [
        (
            "qhost_tenant_running",
            "gauge",
            "Tasks claimed now per tenant, across its batches and the nodes.",
            |t| Some(t.running.to_string()),
        ),
        (
            "qhost_tenant_max_running",
            "gauge",
            "The running limit of each tenant that has one.",
            |t| t.max_running.map(|n| n.to_string()),
        ),
        (
            "qhost_tenant_open",
            "gauge",
            "Tasks open now per tenant (submitted, not ended), across its batches.",
            |t| Some(t.open.to_string()),
        ),
        (
            "qhost_tenant_max_open",
            "gauge",
            "The open limit of each tenant that has one.",
            |t| t.max_open.map(|n| n.to_string()),
        ),
        (
            "qhost_tenant_weight",
            "gauge",
            "Each tenant's weight: its share of the slots under saturation, against the others'.",
            |t| Some(t.weight.to_string()),
        ),
        (
            "qhost_tenant_slot_seconds_total",
            "counter",
            "Slot time each tenant's attempts have held, from each one's start to its end.",
            |t| Some((t.slot_micros as f64 / 1e6).to_string()),
        ),
        (
            "qhost_tenant_cpu_seconds_total",
            "counter",
            "CPU time each tenant's attempts have used: their wasm and host calls, not their waits.",
            |t| Some((t.cpu_micros as f64 / 1e6).to_string()),
        ),
        (
            "qhost_tenant_memory_mib_seconds_total",
            "counter",
            "Memory each tenant's attempts have held, in MiB-seconds: each one's size over its run.",
            |t| Some(t.memory_mib_seconds.to_string()),
        ),
        (
            "qhost_tenant_http_bytes_total",
            "counter",
            "HTTP body bytes each tenant's attempts have sent and received.",
            |t| Some(t.http_bytes.to_string()),
        ),
        (
            "qhost_tenant_cpu_budget_seconds",
            "gauge",
            "The CPU budget per period of each tenant whose budget meters CPU.",
            |t| t.budget?.cpu.map(|cpu| cpu.as_secs_f64().to_string()),
        ),
        (
            "qhost_tenant_cpu_budget_used_seconds",
            "gauge",
            "CPU time each tenant whose budget meters CPU has used in its budget's current \
             window; at the budget, its tasks wait for the next.",
            |t| {
                t.budget?
                    .cpu
                    .map(|_| (t.budget_used.cpu_micros as f64 / 1e6).to_string())
            },
        ),
        (
            "qhost_tenant_memory_budget_mib_seconds",
            "gauge",
            "The memory-time budget per period, in MiB-seconds, of each tenant whose budget \
             meters memory.",
            |t| t.budget?.memory_mib_seconds.map(|m| m.to_string()),
        ),
        (
            "qhost_tenant_memory_budget_used_mib_seconds",
            "gauge",
            "Memory-time each tenant whose budget meters memory has used in its budget's \
             current window, in MiB-seconds.",
            |t| {
                t.budget?
                    .memory_mib_seconds
                    .map(|_| t.budget_used.memory_mib_seconds.to_string())
            },
        ),
        (
            "qhost_tenant_http_budget_bytes",
            "gauge",
            "The HTTP bytes budget per period of each tenant whose budget meters HTTP.",
            |t| t.budget?.http_bytes.map(|b| b.to_string()),
        ),
        (
            "qhost_tenant_http_budget_used_bytes",
            "gauge",
            "HTTP body bytes each tenant whose budget meters HTTP has moved in its budget's \
             current window.",
            |t| {
                t.budget?
                    .http_bytes
                    .map(|_| t.budget_used.http_bytes.to_string())
            },
        ),
    ];
    for (name, kind, help, value) in per_tenant {
        head(&mut text, name, kind, help);
        for t in &tenants {
            if let Some(value) = value(t) {
                let _ = writeln!(text, "{name}{{tenant=\"{}\"}} {value}", label(&t.name));
            }
        }
    }
    // Only the groups with a rate have these series.
    let rated: Vec<_> = groups
        .iter()
        .filter_map(|g| Some((g, g.rate?, g.tokens?)))
        .collect();
    head(
        &mut text,
        "qhost_group_rate_per_second",
        "gauge",
        "The rate of each group with a rate and tasks ready or claimed: tasks claimed per \
         second at most, over its period.",
    );
    for (g, rate, _) in &rated {
        let per_second = f64::from(rate.limit) / rate.period.as_secs_f64();
        let _ = writeln!(
            text,
            "qhost_group_rate_per_second{{group=\"{}\"}} {per_second}",
            label(&g.key)
        );
    }
    head(
        &mut text,
        "qhost_group_rate_tokens",
        "gauge",
        "Tokens left now to each group with a rate and tasks ready or claimed: how many of \
         its tasks a claim may take now, room allowing.",
    );
    for (g, _, tokens) in &rated {
        let _ = writeln!(
            text,
            "qhost_group_rate_tokens{{group=\"{}\"}} {tokens}",
            label(&g.key)
        );
    }
    head(
        &mut text,
        "qhost_slots_busy",
        "gauge",
        "Instance slots running a task on this node.",
    );
    let _ = writeln!(text, "qhost_slots_busy {}", runtime.busy_slots());
    head(
        &mut text,
        "qhost_slots",
        "gauge",
        "Instance slots of this node.",
    );
    let _ = writeln!(text, "qhost_slots {}", runtime.config().workers);
    let occupancy = runtime.busy_slots() as f64 / runtime.config().workers.max(1) as f64;
    head(
        &mut text,
        "qhost_pool_occupancy",
        "gauge",
        "Share of this node's instance slots running a task.",
    );
    let _ = writeln!(text, "qhost_pool_occupancy {occupancy}");
    let held = state.scheduler.running.lock().expect("running lock").len();
    head(
        &mut text,
        "qhost_tasks_held",
        "gauge",
        "Tasks this node has claimed and not completed, running or about to.",
    );
    let _ = writeln!(text, "qhost_tasks_held {held}");
    state.scheduler.metrics.render(&mut text);
    runtime.render_http_metrics(&mut text);
    super::process_metrics::render(&mut text);
    Ok(([(CONTENT_TYPE, "text/plain; version=0.0.4")], text))
}

/// Who may read `/metrics`: the holder of the metrics or the admin token, or anyone on
/// the metrics' own listen address.
pub struct MetricsReader;

impl FromRequestParts<AppState> for MetricsReader {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if state.metrics_open {
            return Ok(MetricsReader);
        }
        let opens = |token: &str| {
            same_token(token, &state.admin_token)
                || state
                    .metrics_token
                    .as_deref()
                    .is_some_and(|metrics| same_token(token, metrics))
        };
        match bearer(&parts.headers) {
            Some(token) if opens(token) => Ok(MetricsReader),
            _ => Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                super::error::ErrorCode::Unauthorized,
                "send `Authorization: Bearer <metrics token or admin token>`, or read \
                 /metrics on its own listen address (`--metrics-listen`)",
            )),
        }
    }
}

fn head(text: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(text, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

#[cfg(test)]
mod tests {
    #[test]
    fn label_values_are_escaped() {
        assert_eq!(super::label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
