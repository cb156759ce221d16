//! Running what was claimed: the starter gives reserved tasks the runtime's slots in
//! claim order, and each run reports its start and its end to the writer.
//!
//! Each attempt's end is a line of the log at `info` (target `qhost::attempt`), and, with
//! traces on, an `attempt` span: a child of the span its task was submitted in (whose
//! context the store kept with the task), linked to the claim that took it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::Ctx;
use super::writer::Done;
use crate::runtime::{DepEnded, Dependency, Inputs, Outcome, RunBudget, RunInfo, RunRequest, Slot};
use crate::scheduler::LocalRun;
use crate::scheduler::module_labels::Shown;
use crate::scheduler::spawn::{Parent, Spawner};
use crate::store::*;
use crate::telemetry;
use crate::telemetry::attempt::{Attempt, AttemptSpan};

/// The log target of the attempts' lines.
pub const LOG_TARGET: &str = "qhost::attempt";
/// The longest error a log line or a span carries, in bytes.
const MAX_LOGGED_ERROR: usize = 256;

/// Starts reserved tasks in claim order as slots free: slots go to waiters first come,
/// first served, and this is their only waiter.
pub(super) async fn start_in_order(ctx: Arc<Ctx>, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = ctx.reserved.wait() => {}
            () = stop.cancelled() => return,
        }
        let slot = tokio::select! {
            slot = ctx.scheduler.runtime.slot() => slot,
            () = stop.cancelled() => return,
        };
        // Handed back while this waited for the slot: the slot goes back unused.
        let Some(task) = ctx.reserved.pop() else {
            continue;
        };
        let cancelled = ctx
            .scheduler
            .running
            .lock()
            .expect("running lock")
            .get(&task.id)
            .is_none_or(|run| run.cancel.is_cancelled());
        if cancelled {
            // Never started: the store ends it cancelled.
            ctx.give_back(vec![task]);
            continue;
        }
        tokio::spawn(run_one(ctx.clone(), task, slot));
    }
}

/// Runs a task in `slot`, unless the node hands it back first, and tells the writer how it
/// went.
async fn run_one(ctx: Arc<Ctx>, task: ClaimedTask, slot: Slot) {
    let scheduler = &ctx.scheduler;
    let started_at = now_micros();
    let shown = scheduler.module_labels.of(task.module, &scheduler.metrics);
    let (cancel, claim) = {
        let mut running = scheduler.running.lock().expect("running lock");
        let run = running.entry(task.id).or_insert_with(|| LocalRun {
            batch: task.batch,
            cancel: CancellationToken::new(),
            started: None,
            claim: None,
        });
        run.started = Some(RunningTask {
            task: task.id,
            batch: task.batch,
            node: scheduler.config.node.clone(),
            slot: Some(slot.index()),
            attempt: task.attempt,
            group: task.group.clone(),
            order: task.order,
            since: started_at,
            lease_expires: task.claimed_at + duration_micros(scheduler.config.lease),
        });
        (run.cancel.clone(), run.claim.take())
    };
    let span = AttemptSpan::start(&Attempt {
        task: task.id,
        batch: task.batch,
        attempt: task.attempt,
        module: &shown.name,
        parent: task.trace.as_deref(),
        claim: claim.as_ref(),
    });
    let trace = span.as_ref().map(|span| span.context().clone());
    let workers = scheduler.runtime.config().workers;
    if scheduler
        .pace
        .by_outlook(workers, scheduler.config.prefetch)
    {
        // The claim loop times the claim of this run's follower from its start.
        scheduler.wake.notify_one();
    }
    let _ = ctx.done.send(Done::Started(Start {
        task: task.id,
        batch: task.batch,
        lease_token: task.lease_token,
        at: started_at,
    }));
    let run = async {
        let module = scheduler.module(task.module).await?;
        let grant = scheduler.batch_grant(task.batch).await?;
        let request = RunRequest {
            input: task.input.clone(),
            info: RunInfo {
                id: task.id as u64,
                batch: task.batch as u64,
                attempt: task.attempt,
                order: task.order,
                group: task.group.clone(),
            },
            limits: task.limits,
            mounts: task.mounts.clone(),
            allow_http: grant.allow_http.clone(),
            settings: grant.settings.clone(),
            cancel,
            inputs: Some(inputs(&scheduler.store, task.id)),
            children: Some(Arc::new(Spawner(Arc::new(Parent {
                scheduler: scheduler.clone(),
                id: task.id,
                batch: task.batch,
                module: task.module,
                order: task.order,
                group: task.group.clone(),
                limits: task.limits,
                mounts: task.mounts.clone(),
                trace: trace.clone(),
            })))),
            trace: trace.clone(),
            budget: RunBudget {
                cpu: task
                    .budget_left
                    .cpu_micros
                    .map(|micros| Duration::from_micros(micros as u64)),
                memory_mib_seconds: task.budget_left.memory_mib_ms.map(|ms| ms as f64 / 1000.0),
                http_bytes: task.budget_left.http_bytes.map(|bytes| bytes as u64),
            },
        };
        scheduler.runtime.run_in(slot, &module, request).await
    };
    let ended = tokio::select! {
        report = run => Some(report),
        () = ctx.hand_back.cancelled() => None,
    };
    scheduler
        .running
        .lock()
        .expect("running lock")
        .remove(&task.id);
    // The slot is free: claim for it while the writer records this end. A store that
    // claims in reports claims for it in the transaction that records it (`standing.rs`).
    ctx.busy.fetch_sub(1, Ordering::Relaxed);
    if !scheduler.store.claims_in_reports() {
        scheduler.wake.notify_one();
    }
    let node = scheduler.config.node.clone();
    let message = match ended {
        None => Done::HandedBack(task.id, task.lease_token),
        Some(Ok(mut report)) => {
            scheduler
                .metrics
                .ran(&shown.series, report.outcome, report.duration);
            scheduler.pace.ran(report.duration);
            ended_as(
                span,
                &task,
                &shown,
                &node,
                Some(report.slot),
                report.outcome,
                report.duration,
                report.error.as_deref(),
            );
            let started_at = to_micros(report.started_at);
            let logs = report.take_logs();
            Done::Completed(Box::new(Completion {
                defer: report.retry_after.map(|wait| crate::store::Defer {
                    until: started_at + duration_micros(report.duration) + duration_micros(wait),
                    most: scheduler.runtime.config().max_deferrals,
                }),
                task: task.id,
                batch: task.batch,
                lease_token: task.lease_token,
                node,
                slot: Some(report.slot),
                started_at,
                ended_at: started_at + duration_micros(report.duration),
                cpu_micros: Some(duration_micros(report.cpu)),
                memory_mib_seconds: Some(report.memory_mib_seconds),
                http_bytes: Some(report.http_bytes),
                outcome: report.outcome,
                error: report.error,
                output: report.output,
                logs,
                stdout: report.stdout.bytes,
                stderr: report.stderr.bytes,
            }))
        }
        Some(Err(err)) => {
            // The host failed, not the guest: the attempt is given back (see `store::fate`).
            // The cause may name the operator's paths, so it goes to the operator's log,
            // and the record says only where to look.
            tracing::error!(task = task.id, "the task could not start: {err:#}");
            scheduler
                .metrics
                .ran(&shown.series, Outcome::HostError, Duration::ZERO);
            ended_as(
                span,
                &task,
                &shown,
                &node,
                None,
                Outcome::HostError,
                Duration::ZERO,
                Some("the task could not start"),
            );
            let now = now_micros();
            Done::Completed(Box::new(Completion {
                defer: None,
                task: task.id,
                batch: task.batch,
                lease_token: task.lease_token,
                node,
                slot: None,
                started_at: now,
                ended_at: now,
                cpu_micros: None,
                memory_mib_seconds: None,
                http_bytes: None,
                outcome: crate::runtime::Outcome::HostError,
                error: Some(format!(
                    "host error: the task could not start on node {}; the cause is in that \
                     node's log",
                    scheduler.config.node
                )),
                output: None,
                logs: Vec::new(),
                stdout: Vec::new(),
                stderr: Vec::new(),
            }))
        }
    };
    // The writer lives until every run has reported.
    let _ = ctx.done.send(message);
}

/// Records how an attempt ended: on its span, and as a line of the log.
#[allow(clippy::too_many_arguments)]
fn ended_as(
    span: Option<AttemptSpan>,
    task: &ClaimedTask,
    shown: &Shown,
    node: &str,
    slot: Option<usize>,
    outcome: Outcome,
    took: Duration,
    error: Option<&str>,
) {
    let error = error.map(|e| telemetry::cut(e, MAX_LOGGED_ERROR));
    if let Some(span) = span {
        // A suspension is no error: the task waits for its children.
        let failed = !matches!(outcome, Outcome::Succeeded | Outcome::Suspended);
        span.end(outcome.as_str(), failed, error);
    }
    tracing::info!(
        target: LOG_TARGET,
        task = task.id,
        batch = task.batch,
        attempt = task.attempt,
        module = &*shown.name,
        outcome = outcome.as_str(),
        ms = telemetry::millis(took),
        node,
        slot,
        error,
        "attempt ended"
    );
}

/// Where task `task`'s attempt reads the tasks it runs after: from `store`, when it asks.
fn inputs(store: &Arc<dyn Store>, task: TaskId) -> Inputs {
    let store = store.clone();
    Inputs::new(move || {
        let store = store.clone();
        Box::pin(async move {
            let read = store
                .task_inputs(task)
                .await
                .map_err(|e| format!("{e:#}"))?;
            Ok(read.into_iter().map(dependency).collect())
        })
    })
}

/// A dependency as the store keeps it, as the runtime gives it.
fn dependency(input: crate::store::Input) -> Dependency {
    let ended = match (input.state, input.outcome) {
        (TaskState::Succeeded, _) => DepEnded::Succeeded,
        (_, Some(Outcome::Skipped)) => DepEnded::Skipped,
        (TaskState::Cancelled, _) => DepEnded::Cancelled,
        _ => DepEnded::Failed,
    };
    Dependency {
        name: input.key.unwrap_or_else(|| input.task.to_string()),
        task: input.task as u64,
        ended,
        output: input.output,
        error: input.error,
    }
}
