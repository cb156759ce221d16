//! The scheduling core in SQLite: the atomic claim, completions and lease rescue.
//!
//! A claim is one write transaction (SQLite has one writer, so nothing else moves
//! meanwhile). It reads ready tasks in priority, then fair-queueing (`vseq`), then
//! submission order, with the room left in each task's group and batch; skips tasks whose
//! group or batch is full (no head-of-line blocking: a blocked task is passed over, never
//! waited on); picks first-fit ([`crate::store::pick`]), so one claim never takes more of
//! a group or batch than it has room for; and takes the picks by id.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, Transaction, params};

use super::{gate, internal};
use crate::runtime::{MountGrant, Outcome, TaskLimits};
use crate::store::fate::{HALTED, backoff_micros};
use crate::store::pick::{Candidate, Place, Rooms, before};
use crate::store::*;

/// Ready tasks in claim order, with the room left in their batch and group: `?1` now,
/// `?2` how many to read. Tasks of full groups and batches are read too, and passed over
/// by the pick: filtering them here would have SQLite read on through every task of a
/// busy group, and a scan would cost the whole queue when most groups are busy.
const CANDIDATES_SQL: &str = "
SELECT t.id, t.batch_id, t.group_key, t.vseq,
       b.max_parallel - b.running AS batch_room,
       g.lim - g.running AS group_room,
       t.priority
FROM tasks t
JOIN batches b ON b.id = t.batch_id
LEFT JOIN groups g ON g.key = t.group_key
WHERE t.state = 1
  AND t.not_before <= ?1
ORDER BY t.priority DESC, t.vseq, t.id
LIMIT ?2";

/// Claimable tasks without a group behind the scan's last one (`?2` priority, `?3` vseq,
/// `?4` id), at most `?5`, none of the batches in the JSON array `?6` (full already); the
/// same columns as [`CANDIDATES_SQL`].
const FREE_BEYOND_SQL: &str = "
SELECT t.id, t.batch_id, t.group_key, t.vseq, b.max_parallel - b.running, NULL, t.priority
FROM tasks t
JOIN batches b ON b.id = t.batch_id
WHERE t.state = 1 AND t.group_key IS NULL
  AND t.not_before <= ?1
  AND (t.priority < ?2 OR (t.priority = ?2 AND (t.vseq, t.id) > (?3, ?4)))
  AND (b.max_parallel IS NULL OR b.running < b.max_parallel)
  AND t.batch_id NOT IN (SELECT value FROM json_each(?6))
ORDER BY t.priority DESC, t.vseq, t.id
LIMIT ?5";

/// Claimable tasks of group `?5` (with room `?6`) behind the scan's last one, at most `?6`,
/// none of the batches in `?7`.
const GROUP_BEYOND_SQL: &str = "
SELECT t.id, t.batch_id, t.group_key, t.vseq, b.max_parallel - b.running, ?6, t.priority
FROM tasks t
JOIN batches b ON b.id = t.batch_id
WHERE t.state = 1 AND t.group_key = ?5
  AND t.not_before <= ?1
  AND (t.priority < ?2 OR (t.priority = ?2 AND (t.vseq, t.id) > (?3, ?4)))
  AND (b.max_parallel IS NULL OR b.running < b.max_parallel)
  AND t.batch_id NOT IN (SELECT value FROM json_each(?7))
ORDER BY t.priority DESC, t.vseq, t.id
LIMIT ?6";

/// The first group from `?1` on (`>=`) that has ready tasks, along the per-group ready
/// index.
const READY_GROUP_FROM_SQL: &str = "
SELECT group_key FROM tasks
WHERE state = 1 AND group_key IS NOT NULL AND group_key >= ?1
ORDER BY group_key LIMIT 1";

/// The first group after `?1` (`>`) that has ready tasks.
const READY_GROUP_AFTER_SQL: &str = "
SELECT group_key FROM tasks
WHERE state = 1 AND group_key IS NOT NULL AND group_key > ?1
ORDER BY group_key LIMIT 1";

/// The first group from `?1` on that has room, and its room, along `groups_open`.
const OPEN_GROUP_FROM_SQL: &str = "
SELECT key, lim - running FROM groups
WHERE running < lim AND key >= ?1
ORDER BY key LIMIT 1";

/// A candidate row: the candidate, its batch's and group's room, and its priority.
type CandidateRow = (Candidate, Option<i64>, Option<i64>, i32);

fn candidate_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CandidateRow> {
    let batch_room: Option<i64> = r.get(4)?;
    let candidate = Candidate {
        id: r.get(0)?,
        batch: r.get(1)?,
        group: r.get(2)?,
        limited: batch_room.is_some(),
        vseq: r.get(3)?,
    };
    Ok((candidate, batch_room, r.get(5)?, r.get(6)?))
}

fn place((c, _, _, priority): &CandidateRow) -> Place {
    (*priority, c.vseq, c.id)
}

/// A list a look read: its group (none: the ungrouped tasks), how many rows it gave, its
/// limit, and its last place. A list that gave its limit may have more behind it.
type List = (Option<String>, i64, i64, Place);

/// One look behind `after` for claimable tasks that a full scan left out: ungrouped tasks,
/// and the first tasks of each group with room left in `rooms`, of batches with room left.
/// Walks the groups that have both ready tasks and room along two indexes, never the
/// tasks of a busy group.
/// Returns the rows in claim order, and the lists they came from.
fn beyond(
    tx: &Transaction<'_>,
    now: Micros,
    (priority, vseq, id): Place,
    need: usize,
    rooms: &Rooms,
) -> StoreResult<(Vec<CandidateRow>, Vec<List>)> {
    let need = need as i64;
    let full: Vec<BatchId> = rooms
        .batches
        .iter()
        .filter(|(_, room)| room.is_some_and(|room| room <= 0))
        .map(|(&batch, _)| batch)
        .collect();
    let full = serde_json::to_string(&full).expect("ids serialize");
    let mut lists: Vec<List> = Vec::new();
    let mut list = |group: Option<String>, rows: &[CandidateRow], limit: i64| {
        if let Some(last) = rows.last().map(place) {
            lists.push((group, rows.len() as i64, limit, last));
        }
    };
    let mut rows: Vec<CandidateRow> = tx
        .prepare_cached(FREE_BEYOND_SQL)
        .map_err(internal)?
        .query_map(params![now, priority, vseq, id, need, full], candidate_row)
        .map_err(internal)?
        .collect::<rusqlite::Result<_>>()
        .map_err(internal)?;
    list(None, &rows, need);
    let mut ready_from = tx.prepare_cached(READY_GROUP_FROM_SQL).map_err(internal)?;
    let mut ready_after = tx.prepare_cached(READY_GROUP_AFTER_SQL).map_err(internal)?;
    let mut open_from = tx.prepare_cached(OPEN_GROUP_FROM_SQL).map_err(internal)?;
    let mut group_beyond = tx.prepare_cached(GROUP_BEYOND_SQL).map_err(internal)?;
    // The groups with ready tasks and room: each walk seeks to the other's next key.
    let mut next_ready = ready_from
        .query_row([""], |r| r.get::<_, String>(0))
        .optional()
        .map_err(internal)?;
    while let Some(group) = next_ready {
        let Some((open, counter)) = open_from
            .query_row([&group], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })
            .optional()
            .map_err(internal)?
        else {
            break;
        };
        if open != group {
            next_ready = ready_from
                .query_row([&open], |r| r.get(0))
                .optional()
                .map_err(internal)?;
            continue;
        }
        // A group already met has what its tasks there left; any other, its counter.
        let room = rooms.groups.get(&group).copied().unwrap_or(counter);
        if room > 0 {
            let limit = room.min(need);
            let heads: Vec<CandidateRow> = group_beyond
                .query_map(
                    params![now, priority, vseq, id, group, limit, full],
                    candidate_row,
                )
                .map_err(internal)?
                .collect::<rusqlite::Result<_>>()
                .map_err(internal)?;
            list(Some(group.clone()), &heads, limit);
            rows.extend(heads);
        }
        next_ready = ready_after
            .query_row([&group], |r| r.get(0))
            .optional()
            .map_err(internal)?;
    }
    rows.sort_by_key(|row| {
        let (priority, vseq, id) = place(row);
        (-priority, vseq, id)
    });
    Ok((rows, lists))
}

/// Gives `trial` the room of the batch and group of a row it has not met yet.
fn meet(trial: &mut Rooms, (candidate, batch_room, group_room, _): &CandidateRow) {
    trial.batches.entry(candidate.batch).or_insert(*batch_room);
    if let (Some(group), Some(room)) = (&candidate.group, group_room) {
        trial.groups.entry(group.clone()).or_insert(*room);
    }
}

/// Where the next look starts: the earliest end of a list cut off at its limit that may
/// have more to give, given the room `trial` leaves once it took the look's rows (a group
/// with no room left has nothing more for this claim).
fn frontier(lists: &[List], trial: &Rooms) -> Option<Place> {
    lists
        .iter()
        .filter(|(group, count, limit, _)| {
            count == limit
                && group
                    .as_ref()
                    .is_none_or(|g| trial.groups.get(g).is_some_and(|room| *room > 0))
        })
        .map(|&(_, _, _, last)| last)
        .reduce(|a, b| if before(a, b) { a } else { b })
}

/// Takes one picked task: `?1` now, `?2` the node, `?3` its lease token, `?4` the lease
/// expiry, `?5` the task.
const TAKE_SQL: &str = "
UPDATE tasks SET state = 2, attempts = attempts + 1, claimed_at = ?1, started_at = NULL,
    lease_node = ?2, lease_token = ?3, lease_expires = ?4
WHERE id = ?5
RETURNING module, input, ord, limits, mounts, attempts";

pub(super) fn claim(tx: &Transaction<'_>, p: &ClaimParams) -> StoreResult<Vec<ClaimedTask>> {
    if p.max == 0 {
        return Ok(Vec::new());
    }
    // Room for candidates a group or batch limit turns away within this claim.
    let scan = p.max * 2 + 32;
    let mut rooms = Rooms::default();
    let mut candidates: Vec<Candidate> = Vec::new();
    let add = |rooms: &mut Rooms, candidates: &mut Vec<Candidate>, row: CandidateRow| {
        let (candidate, batch_room, group_room, _) = row;
        rooms.batches.entry(candidate.batch).or_insert(batch_room);
        if let (Some(group), Some(room)) = (&candidate.group, group_room) {
            rooms.groups.entry(group.clone()).or_insert(room);
        }
        candidates.push(candidate);
    };
    let mut last = None;
    for row in tx
        .prepare_cached(CANDIDATES_SQL)
        .map_err(internal)?
        .query_map(params![p.now, scan as i64], candidate_row)
        .map_err(internal)?
    {
        let row = row.map_err(internal)?;
        last = Some((row.3, row.0.vseq, row.0.id));
        add(&mut rooms, &mut candidates, row);
    }
    // A full scan that cannot fill the claim (full groups or batches filled it): look
    // behind it, until the claim is filled or nothing claimable is left. Each look either
    // fills the claim, reaches the end, or finds another group or batch full, which the
    // next look passes over.
    if candidates.len() == scan
        && let Some(mut after) = last
    {
        let (mut fits, mut trial) = rooms.trial(&candidates, p.max);
        while fits < p.max {
            let (rows, lists) = beyond(tx, p.now, after, p.max - fits, &trial)?;
            let mut probe = trial.clone();
            for row in &rows {
                meet(&mut probe, row);
                probe.take(&row.0);
            }
            let frontier = frontier(&lists, &probe);
            // What lies after the frontier, the next look reads again.
            for row in rows
                .into_iter()
                .filter(|row| frontier.is_none_or(|f| !before(f, place(row))))
            {
                meet(&mut trial, &row);
                if trial.take(&row.0) {
                    fits += 1;
                }
                add(&mut rooms, &mut candidates, row);
            }
            match frontier {
                Some(frontier) => after = frontier,
                None => break,
            }
        }
    }
    let picks: Vec<Candidate> = candidates
        .into_iter()
        .filter(|c| rooms.take(c))
        .take(p.max)
        .collect();
    if picks.is_empty() {
        return Ok(Vec::new());
    }
    // Tokens differ between attempts of a task: a fresh random base for every claim.
    let token_base = random_token() >> 2;
    let expires = p.now + duration_micros(p.lease);
    let mut take = tx.prepare_cached(TAKE_SQL).map_err(internal)?;
    let mut claimed = Vec::with_capacity(picks.len());
    for pick in &picks {
        let lease_token = token_base + pick.id;
        let task = take
            .query_row(params![p.now, p.node, lease_token, expires, pick.id], |r| {
                let limits: String = r.get(3)?;
                let mounts: String = r.get(4)?;
                Ok(ClaimedTask {
                    id: pick.id,
                    batch: pick.batch,
                    module: super::digest_of(r.get(0)?),
                    input: r.get(1)?,
                    order: r.get(2)?,
                    group: pick.group.clone(),
                    limits: serde_json::from_str::<TaskLimits>(&limits).unwrap_or_default(),
                    mounts: serde_json::from_str::<Vec<MountGrant>>(&mounts).unwrap_or_default(),
                    attempt: r.get(5)?,
                    lease_token,
                    claimed_at: p.now,
                })
            })
            .map_err(internal)?;
        claimed.push(task);
    }
    let latest_vseq = picks.iter().map(|c| c.vseq).max().unwrap_or(0);
    // The counters change once per batch and group, not once per task.
    let mut batches: HashMap<BatchId, (i64, i64)> = HashMap::new();
    let mut groups: HashMap<&str, i64> = HashMap::new();
    for task in &claimed {
        let entry = batches.entry(task.batch).or_insert((0, task.order));
        entry.0 += 1;
        entry.1 = entry.1.max(task.order);
        if let Some(group) = &task.group {
            *groups.entry(group).or_default() += 1;
        }
    }
    let mut batch_running = tx
        .prepare_cached(
            "UPDATE batches SET running = running + ?1,
                 max_started_order = max(coalesce(max_started_order, ?2), ?2)
             WHERE id = ?3",
        )
        .map_err(internal)?;
    for (batch, (count, order)) in batches {
        batch_running
            .execute(params![count, order, batch])
            .map_err(internal)?;
    }
    let mut group_running = tx
        .prepare_cached("UPDATE groups SET running = running + ? WHERE key = ?")
        .map_err(internal)?;
    for (group, count) in groups {
        group_running
            .execute(params![count, group])
            .map_err(internal)?;
    }
    tx.prepare_cached("UPDATE scheduler SET vtime = max(vtime, ?)")
        .map_err(internal)?
        .execute([latest_vseq])
        .map_err(internal)?;
    Ok(claimed)
}

/// What the completion of an attempt needs to know about its task.
struct Running {
    id: TaskId,
    batch: BatchId,
    order: i64,
    group: Option<String>,
    attempts: u32,
    max_attempts: u32,
    backoff_ms: i64,
    cancel_requested: bool,
    lease_token: i64,
    lease_node: String,
    /// When it started on its slot, or else when it was claimed.
    started_at: Micros,
}

const RUNNING_COLUMNS: &str = "id, batch_id, ord, group_key, attempts, max_attempts, backoff_ms,
    cancel_requested, lease_token, lease_node, coalesce(started_at, claimed_at)";

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
    })
}

pub(super) fn complete(
    tx: &Transaction<'_>,
    completions: Vec<Completion>,
    now: Micros,
) -> StoreResult<CompleteResult> {
    let mut result = CompleteResult::default();
    let (succeeded, others): (Vec<_>, Vec<_>) = completions
        .into_iter()
        .partition(|c| c.outcome.is_success());
    complete_successes(tx, succeeded, now, &mut result)?;
    let sql = format!("SELECT {RUNNING_COLUMNS} FROM tasks WHERE id = ? AND state = 2");
    for c in others {
        let task = tx
            .prepare_cached(&sql)
            .map_err(internal)?
            .query_row([c.task], running_row)
            .optional()
            .map_err(internal)?;
        let Some(task) = task.filter(|t| t.lease_token == c.lease_token) else {
            result.stale += 1;
            continue;
        };
        record_attempt(tx, &task, &AttemptEnd::of(&c))?;
        finish(tx, &task, c.outcome, c.error, c.output, now, &mut result)?;
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
    result: &mut CompleteResult,
) -> StoreResult<()> {
    if succeeded.is_empty() {
        return Ok(());
    }
    let mut end = tx
        .prepare_cached(
            "UPDATE tasks SET state = 3, ended_at = ?1, outcome = 'succeeded', error = NULL, output = ?2,
                 lease_node = NULL, lease_token = NULL, lease_expires = NULL
             WHERE id = ?3 AND state = 2 AND lease_token = ?4
             RETURNING batch_id, ord, group_key, attempts, claimed_at",
        )
        .map_err(internal)?;
    let mut batches: HashMap<BatchId, i64> = HashMap::new();
    let mut groups: HashMap<String, i64> = HashMap::new();
    let mut orders: HashMap<(BatchId, i64), i64> = HashMap::new();
    for c in succeeded {
        let ended = end
            .query_row(params![now, c.output, c.task, c.lease_token], |r| {
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
                })
            })
            .optional()
            .map_err(internal)?;
        let Some(task) = ended else {
            result.stale += 1;
            continue;
        };
        record_attempt(tx, &task, &AttemptEnd::of(&c))?;
        *batches.entry(task.batch).or_default() += 1;
        if let Some(group) = task.group {
            *groups.entry(group).or_default() += 1;
        }
        *orders.entry((task.batch, task.order)).or_default() += 1;
        result.ended.push((task.id, task.batch));
    }
    let mut batch_running = tx
        .prepare_cached("UPDATE batches SET running = running - ? WHERE id = ?")
        .map_err(internal)?;
    for (batch, count) in batches {
        batch_running
            .execute(params![count, batch])
            .map_err(internal)?;
    }
    let mut group_running = tx
        .prepare_cached("UPDATE groups SET running = running - ? WHERE key = ?")
        .map_err(internal)?;
    for (group, count) in groups {
        group_running
            .execute(params![count, group])
            .map_err(internal)?;
    }
    for ((batch, order), count) in orders {
        gate::close_many(tx, batch, order, count)?;
    }
    Ok(())
}

pub(super) fn rescue(
    tx: &Transaction<'_>,
    node: Option<&str>,
    now: Micros,
) -> StoreResult<CompleteResult> {
    let mut result = CompleteResult::default();
    let lost: Vec<Running> = {
        let sql = format!(
            "SELECT {RUNNING_COLUMNS} FROM tasks
             WHERE state = 2 AND (lease_expires < ?1 OR lease_node = ?2)"
        );
        let mut stmt = tx.prepare_cached(&sql).map_err(internal)?;
        let rows = stmt
            .query_map(params![now, node], running_row)
            .map_err(internal)?;
        rows.collect::<Result<_, _>>().map_err(internal)?
    };
    for task in lost {
        let error = if Some(task.lease_node.as_str()) == node {
            format!("node {} restarted while the attempt ran", task.lease_node)
        } else {
            format!(
                "node {} stopped renewing the attempt's lease",
                task.lease_node
            )
        };
        record_attempt(
            tx,
            &task,
            &AttemptEnd {
                node: &task.lease_node,
                slot: None,
                started_at: task.started_at,
                ended_at: now,
                outcome: Outcome::Lost,
                error: Some(&error),
                logs: &[],
                stdout: &[],
                stderr: &[],
            },
        )?;
        finish(
            tx,
            &task,
            Outcome::Lost,
            Some(error),
            None,
            now,
            &mut result,
        )?;
    }
    Ok(result)
}

pub(super) fn release(
    tx: &Transaction<'_>,
    tasks: &[(TaskId, i64)],
    now: Micros,
) -> StoreResult<CompleteResult> {
    let mut result = CompleteResult::default();
    let sql = format!("SELECT {RUNNING_COLUMNS} FROM tasks WHERE id = ? AND state = 2");
    for &(id, token) in tasks {
        let task = tx
            .prepare_cached(&sql)
            .map_err(internal)?
            .query_row([id], running_row)
            .optional()
            .map_err(internal)?;
        let Some(task) = task.filter(|t| t.lease_token == token) else {
            continue;
        };
        release_slots(tx, &task)?;
        if task.cancel_requested {
            // Its cancellation reached it before it started: it ends as a pending one would.
            tx.prepare_cached(
                "UPDATE tasks SET state = 5, attempts = attempts - 1, ended_at = ?,
                     outcome = 'cancelled', error = 'cancelled before it ran',
                     lease_node = NULL, lease_token = NULL, lease_expires = NULL
                 WHERE id = ?",
            )
            .map_err(internal)?
            .execute(params![now, id])
            .map_err(internal)?;
            gate::close(tx, task.batch, task.order)?;
            result.ended.push((task.id, task.batch));
            continue;
        }
        tx.prepare_cached(
            "UPDATE tasks SET state = 1, attempts = attempts - 1, claimed_at = NULL,
                 lease_node = NULL, lease_token = NULL, lease_expires = NULL
             WHERE id = ?",
        )
        .map_err(internal)?
        .execute([id])
        .map_err(internal)?;
    }
    Ok(result)
}

/// Whether the batch halts on failure and one of its tasks has failed for good.
fn halted(tx: &Transaction<'_>, batch: BatchId) -> StoreResult<bool> {
    tx.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM batches WHERE id = ?1 AND halt_on_failure)
            AND EXISTS (SELECT 1 FROM tasks WHERE batch_id = ?1 AND state = 4)",
    )
    .map_err(internal)?
    .query_row([batch], |r| r.get(0))
    .map_err(internal)
}

fn release_slots(tx: &Transaction<'_>, task: &Running) -> StoreResult<()> {
    tx.prepare_cached("UPDATE batches SET running = running - 1 WHERE id = ?")
        .map_err(internal)?
        .execute([task.batch])
        .map_err(internal)?;
    if let Some(group) = &task.group {
        tx.prepare_cached("UPDATE groups SET running = running - 1 WHERE key = ?")
            .map_err(internal)?
            .execute([group])
            .map_err(internal)?;
    }
    Ok(())
}

fn record_attempt(tx: &Transaction<'_>, task: &Running, end: &AttemptEnd<'_>) -> StoreResult<()> {
    let logs =
        (!end.logs.is_empty()).then(|| serde_json::to_string(end.logs).expect("logs serialize"));
    tx.prepare_cached(
        "INSERT INTO attempts (task_id, batch_id, attempt, node, slot, lease_token, group_key, ord,
             started_at, ended_at, outcome, error, logs, stdout, stderr)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .map_err(internal)?
    .execute(params![
        task.id,
        task.batch,
        task.attempts,
        end.node,
        end.slot.map(|s| s as i64),
        task.lease_token,
        task.group,
        task.order,
        end.started_at,
        end.ended_at,
        end.outcome.as_str(),
        end.error,
        logs,
        (!end.stdout.is_empty()).then_some(end.stdout),
        (!end.stderr.is_empty()).then_some(end.stderr),
    ])
    .map_err(internal)?;
    Ok(())
}

/// Releases the task's group and batch slots, then ends it, or puts it back for another
/// attempt.
fn finish(
    tx: &Transaction<'_>,
    task: &Running,
    outcome: Outcome,
    error: Option<String>,
    output: Option<Vec<u8>>,
    now: Micros,
    result: &mut CompleteResult,
) -> StoreResult<()> {
    release_slots(tx, task)?;
    let may_retry = !outcome.is_success()
        && outcome != Outcome::Cancelled
        && !task.cancel_requested
        && task.attempts < task.max_attempts;
    let halted = may_retry && halted(tx, task.batch)?;
    let retry = may_retry && !halted;
    if retry {
        let not_before = now + backoff_micros(task.backoff_ms, task.attempts);
        tx.prepare_cached(
            "UPDATE tasks SET state = 1, not_before = ?, outcome = ?, error = ?,
                 lease_node = NULL, lease_token = NULL, lease_expires = NULL
             WHERE id = ?",
        )
        .map_err(internal)?
        .execute(params![not_before, outcome.as_str(), error, task.id])
        .map_err(internal)?;
        result.retried += 1;
        return Ok(());
    }
    let (state, outcome, error) = if halted {
        (
            TaskState::Cancelled,
            Outcome::Cancelled,
            Some(HALTED.into()),
        )
    } else if outcome == Outcome::Cancelled || (task.cancel_requested && !outcome.is_success()) {
        (
            TaskState::Cancelled,
            Outcome::Cancelled,
            error.or(Some("cancelled while running".into())),
        )
    } else if outcome.is_success() {
        (TaskState::Succeeded, outcome, None)
    } else {
        (TaskState::Failed, outcome, error)
    };
    tx.prepare_cached(
        "UPDATE tasks SET state = ?, ended_at = ?, outcome = ?, error = ?, output = ?,
             lease_node = NULL, lease_token = NULL, lease_expires = NULL
         WHERE id = ?",
    )
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
    gate::close(tx, task.batch, task.order)?;
    result.ended.push((task.id, task.batch));
    if state == TaskState::Failed {
        let halts: bool = tx
            .prepare_cached("SELECT halt_on_failure FROM batches WHERE id = ?")
            .map_err(internal)?
            .query_row([task.batch], |r| r.get(0))
            .map_err(internal)?;
        if halts {
            let reason = format!(
                "cancelled: task {} failed and the batch halts on failure",
                task.id
            );
            gate::cancel_pending(tx, task.batch, now, &reason)?;
        }
    }
    Ok(())
}
