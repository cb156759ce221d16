//! Ends of attempts in SQLite: completions (a success ends its task; a failure retries it
//! after its backoff while it has attempts left, or ends it), a halting batch's
//! cancellations, the rescue of tasks whose lease was lost, a node handing back tasks
//! it had not started, lease renewal, and start marks.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, Transaction, params};

use super::{gate, graph, hooks, internal, log};
use crate::runtime::Outcome;
use crate::store::*;

/// What the completion of an attempt needs to know about its task.
pub(super) struct Running {
    pub(super) id: TaskId,
    pub(super) batch: BatchId,
    pub(super) order: i64,
    pub(super) group: Option<String>,
    pub(super) attempts: u32,
    pub(super) max_attempts: u32,
    pub(super) backoff_ms: i64,
    pub(super) cancel_requested: bool,
    pub(super) lease_token: i64,
    pub(super) lease_node: String,
    /// When it started on its slot, or else when it was claimed.
    pub(super) started_at: Micros,
    /// How many times it was deferred.
    pub(super) deferrals: u32,
}

/// Reads a row of `sql/running_get.sql` or `sql/running_lost.sql`.
fn running_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Running> {
    Ok(Running {
        id: r.get(0)?,
        batch: r.get(1)?,
        order: r.get(2)?,
        group: r.get(3)?,
        attempts: r.get(4)?,
        max_attempts: r.get(5)?,
        backoff_ms: r.get(6)?,
        cancel_requested: r.get(7)?,
        lease_token: r.get(8)?,
        lease_node: r.get(9)?,
        started_at: r.get(10)?,
        deferrals: r.get(11)?,
    })
}

/// A batch has `?` fewer tasks claimed; returns whether it has a webhook, so that a batch
/// without one costs no statement more (see `hooks.rs`), and its tenant, whose count the
/// same slots leave.
pub(super) const BATCH_FREE_SQL: &str = "UPDATE batches SET running = running - ? WHERE id = ? \
    RETURNING webhook_url IS NOT NULL, tenant_id";
/// A tenant has `?1` fewer tasks claimed, whose `?7` attempts that ran held slots `?2`
/// microseconds, used `?4` microseconds of CPU, held `?5` MiB-seconds of memory and
/// moved `?9` HTTP bytes, counted in its fair share and its budget's window at `?6`;
/// returns whether the tenant is held then.
pub(super) const TENANT_FREE_SQL: &str = include_str!("sql/complete_free_tenant.sql");
/// A group takes no new task until `?1` (a deferred attempt's time), or its later hold.
pub(super) const GROUP_HOLD_SQL: &str =
    "UPDATE groups SET held_until = max(held_until, ?1) WHERE key = ?2";
/// A group has `?` fewer tasks claimed.
pub(super) const GROUP_FREE_SQL: &str = "UPDATE groups SET running = running - ? WHERE key = ?";
/// A claimed task's start mark (state 2: claimed), if its lease is still the caller's.
pub(super) const START_SQL: &str =
    "UPDATE tasks SET started_at = ? WHERE id = ? AND state = 2 AND lease_token = ?";
/// A node's leases renewed, along tasks_running (state 2: claimed).
pub(super) const RENEW_SQL: &str = "UPDATE tasks INDEXED BY tasks_running SET lease_expires = ? \
    WHERE state = 2 AND lease_node = ?";
/// The tasks a node holds whose cancellation was asked, along tasks_running.
pub(super) const CANCEL_ASKED_SQL: &str = "SELECT id FROM tasks INDEXED BY tasks_running \
    WHERE state = 2 AND lease_node = ? AND cancel_requested = 1";

/// Ends the attempts that `completions` report. A completion whose lease is gone (the
/// task was rescued meanwhile) is stale and changes nothing. `server`: the server has a
/// webhook, which hears of every batch's end and task's final failure.
pub(super) fn complete(
    tx: &Transaction<'_>,
    mut completions: Vec<Completion>,
    now: Micros,
    server: bool,
) -> StoreResult<CompleteResult> {
    let mut result = CompleteResult::default();
    super::quotas::charge(tx, &mut completions)?;
    let (succeeded, others): (Vec<_>, Vec<_>) = completions
        .into_iter()
        .partition(|c| c.outcome.is_success());
    complete_successes(tx, succeeded, now, server, &mut result)?;
    for c in others {
        let task = tx
            .prepare_cached(include_str!("sql/running_get.sql"))
            .map_err(internal)?
            .query_row([c.task], running_row)
            .optional()
            .map_err(internal)?;
        let Some(task) = task.filter(|t| t.lease_token == c.lease_token) else {
            super::quotas::refund(tx, &c)?;
            result.stale += 1;
            continue;
        };
        let end = AttemptEnd::of(&c);
        log::record(tx, &task, &end)?;
        let used = end.used();
        if c.outcome == Outcome::Suspended && !task.cancel_requested && !halted(tx, task.batch)? {
            free_slots(tx, &task, used, now, &mut result)?;
            super::spawn::suspend(tx, task.id, c.output.unwrap_or_default())?;
            result.retried += 1;
            continue;
        }
        finish(
            tx,
            &task,
            used,
            c.outcome,
            c.error,
            c.output,
            c.defer,
            now,
            server,
            &mut result,
        )?;
    }
    Ok(result)
}

/// The common case, kept to one statement per task plus the attempt's record: a success
/// ends its task whatever its attempts, and its slots and gate are counted per batch,
/// group and order.
fn complete_successes(
    tx: &Transaction<'_>,
    succeeded: Vec<Completion>,
    now: Micros,
    server: bool,
    result: &mut CompleteResult,
) -> StoreResult<()> {
    if succeeded.is_empty() {
        return Ok(());
    }
    let mut end = tx
        .prepare_cached(include_str!("sql/complete_succeeded.sql"))
        .map_err(internal)?;
    // Per batch: its slots freed, and what their attempts used.
    let mut batches: HashMap<BatchId, (i64, Used)> = HashMap::new();
    let mut groups: HashMap<String, i64> = HashMap::new();
    let mut orders: HashMap<(BatchId, i64), i64> = HashMap::new();
    let mut leading: Vec<TaskId> = Vec::new();
    for c in succeeded {
        let ended = end
            .query_row(params![now, c.output, c.task, c.lease_token], |r| {
                if r.get::<_, bool>(5)? {
                    leading.push(c.task);
                }
                Ok(Running {
                    id: c.task,
                    batch: r.get(0)?,
                    order: r.get(1)?,
                    group: r.get(2)?,
                    attempts: r.get(3)?,
                    max_attempts: 0,
                    backoff_ms: 0,
                    cancel_requested: false,
                    lease_token: c.lease_token,
                    lease_node: String::new(),
                    started_at: r.get(4)?,
                    deferrals: 0,
                })
            })
            .optional()
            .map_err(internal)?;
        let Some(task) = ended else {
            super::quotas::refund(tx, &c)?;
            result.stale += 1;
            continue;
        };
        log::record(tx, &task, &AttemptEnd::of(&c))?;
        let freed = batches.entry(task.batch).or_default();
        freed.0 += 1;
        freed.1 += AttemptEnd::of(&c).used();
        if let Some(group) = task.group {
            *groups.entry(group).or_default() += 1;
        }
        *orders.entry((task.batch, task.order)).or_default() += 1;
        result.ended.push((task.id, task.batch));
    }
    let mut batch_running = tx.prepare_cached(BATCH_FREE_SQL).map_err(internal)?;
    let mut hooked: HashMap<BatchId, bool> = HashMap::with_capacity(batches.len());
    for (batch, (count, used)) in batches {
        let (has_hook, tenant) = batch_running
            .query_row(params![count, batch], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(internal)?;
        hooked.insert(batch, has_hook);
        free_tenant(tx, tenant, count, used, now, result)?;
    }
    let mut group_running = tx.prepare_cached(GROUP_FREE_SQL).map_err(internal)?;
    for (group, count) in groups {
        group_running
            .execute(params![count, group])
            .map_err(internal)?;
    }
    for ((batch, order), count) in orders {
        let ended = gate::close_many(tx, batch, order, count)?;
        if ended && (server || hooked[&batch]) {
            result.hooked |= hooks::batch_ended(tx, batch, server, now)?;
        }
    }
    if !leading.is_empty() {
        graph::settle_well(tx, &leading)?;
    }
    Ok(())
}

/// Ends the attempts whose lease was lost, expired or held by `node` (which restarted),
/// as lost: retried while their task has attempts left.
pub(super) fn rescue(
    tx: &Transaction<'_>,
    node: Option<&str>,
    now: Micros,
    server: bool,
) -> StoreResult<CompleteResult> {
    let mut result = CompleteResult::default();
    let lost: Vec<Running> = {
        let mut stmt = tx
            .prepare_cached(include_str!("sql/running_lost.sql"))
            .map_err(internal)?;
        let rows = stmt
            .query_map(params![now, node], running_row)
            .map_err(internal)?;
        rows.collect::<Result<_, _>>().map_err(internal)?
    };
    for task in lost {
        let restarted = Some(task.lease_node.as_str()) == node;
        let error = fate::lost_reason(&task.lease_node, restarted);
        let end = AttemptEnd {
            node: &task.lease_node,
            slot: None,
            started_at: task.started_at,
            ended_at: now,
            cpu_micros: None,
            memory_mib_seconds: None,
            http_bytes: None,
            outcome: Outcome::Lost,
            error: Some(&error),
            logs: &[],
            stdout: &[],
            stderr: &[],
        };
        log::record(tx, &task, &end)?;
        let used = end.used();
        finish(
            tx,
            &task,
            used,
            Outcome::Lost,
            Some(error),
            None,
            None,
            now,
            server,
            &mut result,
        )?;
    }
    Ok(result)
}

/// Takes back tasks their node claimed and had not started: each is ready again, or
/// ends if its cancellation was asked meanwhile. A task whose lease is gone is skipped.
pub(super) fn hand_back(
    tx: &Transaction<'_>,
    tasks: &[(TaskId, i64)],
    now: Micros,
    server: bool,
) -> StoreResult<CompleteResult> {
    let mut result = CompleteResult::default();
    for &(id, token) in tasks {
        let task = tx
            .prepare_cached(include_str!("sql/running_get.sql"))
            .map_err(internal)?
            .query_row([id], running_row)
            .optional()
            .map_err(internal)?;
        let Some(task) = task.filter(|t| t.lease_token == token) else {
            continue;
        };
        // Not started: it held its slot for no run.
        let hooked = free_slots(tx, &task, Used::default(), now, &mut result)? || server;
        if task.cancel_requested {
            // Its cancellation reached it before it started: it ends as a pending one would.
            tx.prepare_cached(include_str!("sql/hand_back_cancelled.sql"))
                .map_err(internal)?
                .execute(params![now, id])
                .map_err(internal)?;
            if gate::close(tx, task.batch, task.order)? && hooked {
                result.hooked |= hooks::batch_ended(tx, task.batch, server, now)?;
            }
            result.ended.push((task.id, task.batch));
            graph::settle(tx, vec![(task.id, false)], now, server, &mut result)?;
            continue;
        }
        tx.prepare_cached(include_str!("sql/hand_back.sql"))
            .map_err(internal)?
            .execute([id])
            .map_err(internal)?;
    }
    Ok(result)
}

/// Whether the batch halts on failure and one of its tasks has failed for good.
fn halted(tx: &Transaction<'_>, batch: BatchId) -> StoreResult<bool> {
    tx.prepare_cached(include_str!("sql/complete_halted.sql"))
        .map_err(internal)?
        .query_row([batch], |r| r.get(0))
        .map_err(internal)
}

/// Frees `count` of `tenant`'s slots, whose attempts used `used`, if the batch that had
/// them has a tenant; marks `result` when the tenant is held for its spent budget.
fn free_tenant(
    tx: &Transaction<'_>,
    tenant: Option<TenantId>,
    count: i64,
    used: Used,
    now: Micros,
    result: &mut CompleteResult,
) -> StoreResult<()> {
    if let Some(tenant) = tenant {
        let held: bool = tx
            .prepare_cached(TENANT_FREE_SQL)
            .map_err(internal)?
            .query_row(
                params![
                    count,
                    used.slot_micros,
                    tenant,
                    used.cpu_micros,
                    used.memory_mib_seconds,
                    now,
                    used.attempts,
                    used.memory_mib_ms,
                    used.http_bytes
                ],
                |r| r.get(0),
            )
            .map_err(internal)?;
        result.tenant_held |= held;
    }
    Ok(())
}

/// Frees the task's slots, whose attempt used `used`; returns whether its batch has a
/// webhook.
fn free_slots(
    tx: &Transaction<'_>,
    task: &Running,
    used: Used,
    now: Micros,
    result: &mut CompleteResult,
) -> StoreResult<bool> {
    let (hooked, tenant) = tx
        .prepare_cached(BATCH_FREE_SQL)
        .map_err(internal)?
        .query_row(params![1, task.batch], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(internal)?;
    free_tenant(tx, tenant, 1, used, now, result)?;
    if let Some(group) = &task.group {
        tx.prepare_cached(GROUP_FREE_SQL)
            .map_err(internal)?
            .execute(params![1, group])
            .map_err(internal)?;
    }
    Ok(hooked)
}

/// Frees the task's group, batch and tenant slots (its attempt used `used` of them),
/// then ends it, or puts it back for another
/// attempt. A final failure, and the batch's end, are written for its webhooks.
#[allow(clippy::too_many_arguments)]
fn finish(
    tx: &Transaction<'_>,
    task: &Running,
    used: Used,
    outcome: Outcome,
    error: Option<String>,
    output: Option<Vec<u8>>,
    defer: Option<Defer>,
    now: Micros,
    server: bool,
    result: &mut CompleteResult,
) -> StoreResult<()> {
    let hooked = free_slots(tx, task, used, now, result)? || server;
    let (state, outcome, error) = if outcome.is_success() {
        (TaskState::Succeeded, outcome, None)
    } else {
        let failed = fate::Failed {
            outcome,
            error,
            attempts: task.attempts,
            max_attempts: task.max_attempts,
            backoff_ms: task.backoff_ms,
            cancel_requested: task.cancel_requested,
            defer,
            deferrals: task.deferrals,
        };
        let halted = failed.may_retry() && halted(tx, task.batch)?;
        match failed.fate(halted, now) {
            fate::Fate::Retry {
                not_before,
                error,
                given_back,
            } => {
                tx.prepare_cached(include_str!("sql/complete_retry.sql"))
                    .map_err(internal)?
                    .execute(params![
                        not_before,
                        outcome.as_str(),
                        error,
                        task.id,
                        i64::from(given_back),
                        0
                    ])
                    .map_err(internal)?;
                result.retried += 1;
                return Ok(());
            }
            fate::Fate::Defer { until, error } => {
                tx.prepare_cached(include_str!("sql/complete_retry.sql"))
                    .map_err(internal)?
                    .execute(params![until, outcome.as_str(), error, task.id, 0, 1])
                    .map_err(internal)?;
                if let Some(group) = &task.group {
                    tx.prepare_cached(GROUP_HOLD_SQL)
                        .map_err(internal)?
                        .execute(params![until, group])
                        .map_err(internal)?;
                }
                result.retried += 1;
                return Ok(());
            }
            fate::Fate::End {
                state,
                outcome,
                error,
            } => (state, outcome, error),
        }
    };
    tx.prepare_cached(include_str!("sql/complete_ended.sql"))
        .map_err(internal)?
        .execute(params![
            state.code(),
            now,
            outcome.as_str(),
            error,
            output,
            task.id
        ])
        .map_err(internal)?;
    if hooked && state == TaskState::Failed {
        result.hooked |= hooks::write(
            tx,
            task.batch,
            Some(task.id),
            HookKind::TaskFailed,
            Some(outcome.as_str()),
            error.as_deref(),
            server,
            now,
        )?;
    }
    let mut ended = gate::close(tx, task.batch, task.order)?;
    result.ended.push((task.id, task.batch));
    // Before a halt, as the tasks after it would see its end first.
    let well = state == TaskState::Succeeded;
    graph::settle(tx, vec![(task.id, well)], now, server, result)?;
    if state == TaskState::Failed {
        let halts: bool = tx
            .prepare_cached("SELECT halt_on_failure FROM batches WHERE id = ?")
            .map_err(internal)?
            .query_row([task.batch], |r| r.get(0))
            .map_err(internal)?;
        if halts {
            let reason = fate::halt_reason(task.id);
            ended |= gate::cancel_pending(tx, task.batch, now, &reason)?.1;
        }
    }
    if ended && hooked {
        result.hooked |= hooks::batch_ended(tx, task.batch, server, now)?;
    }
    Ok(())
}

/// Records a node's report: its start marks, then its completions.
pub(super) fn report(
    tx: &Transaction<'_>,
    starts: Vec<Start>,
    completions: Vec<Completion>,
    now: Micros,
    server_hook: bool,
) -> StoreResult<CompleteResult> {
    start(tx, starts)?;
    if completions.is_empty() {
        return Ok(CompleteResult::default());
    }
    complete(tx, completions, now, server_hook)
}

/// Marks claimed tasks started on their node's slots: reserved becomes running. A mark
/// whose lease is gone (the task was rescued) changes nothing.
pub(super) fn start(tx: &Transaction<'_>, starts: Vec<Start>) -> StoreResult<()> {
    let mut mark = tx.prepare_cached(START_SQL).map_err(internal)?;
    for start in starts {
        mark.execute(params![start.at, start.task, start.lease_token])
            .map_err(internal)?;
    }
    Ok(())
}

/// Extends the leases of every task `node` holds (state 2, claimed) until `until`;
/// returns those of them whose cancellation was asked.
pub(super) fn renew(tx: &Transaction<'_>, node: String, until: Micros) -> StoreResult<Vec<TaskId>> {
    tx.prepare_cached(RENEW_SQL)
        .map_err(internal)?
        .execute(params![until, node])
        .map_err(internal)?;
    let mut stmt = tx.prepare_cached(CANCEL_ASKED_SQL).map_err(internal)?;
    let ids = stmt.query_map([&node], |r| r.get(0)).map_err(internal)?;
    ids.collect::<Result<_, _>>().map_err(internal)
}
