//! The atomic claim in SQLite: which ready tasks a node takes, and the look behind a scan
//! that full groups or batches cut short. Completions, rescue and start marks are in
//! `complete.rs`.
//!
//! A claim is one write transaction (SQLite has one writer, so nothing else moves
//! meanwhile). It reads ready tasks in priority, then fair-queueing (`vseq`), then
//! submission order, with the room left in each task's group, batch and tenant; skips
//! tasks whose group, batch or tenant is full (no head-of-line blocking: a blocked task
//! is passed over, never waited on); picks first-fit ([`crate::store::pick`]), so one
//! claim never takes more of a group, batch or tenant than it has room for; and takes the
//! picks by id. A group with a rate has no more room than tokens ([`crate::store::rate`]);
//! the claim moves its bucket on with its counter. A tenant has no more room than its
//! fair share gives it (`share.rs` runs the claim in rounds).

use std::collections::{BTreeMap, HashMap};

use rusqlite::{OptionalExtension, Transaction, params};

use super::internal;
use crate::runtime::MountGrant;
use crate::store::pick::{Candidate, GroupRoom, Place, Rooms, before};
use crate::store::*;
use crate::store::{hold, rate};

/// Ready tasks in claim order, with the room left in their batch and group. Tasks of full
/// groups and batches are read too, and passed over by the pick: filtering them here
/// would have SQLite read on through every task of a busy group, and a scan would cost
/// the whole queue when most groups are busy.
pub(super) const CANDIDATES_SQL: &str = include_str!("sql/claim_candidates.sql");
/// Claimable tasks without a group behind the scan's last one.
pub(super) const FREE_BEYOND_SQL: &str = include_str!("sql/claim_free_beyond.sql");
/// The first claimable tasks of one group behind the scan's last one.
pub(super) const GROUP_BEYOND_SQL: &str = include_str!("sql/claim_group_beyond.sql");
/// The first group from a key on (`>=`) that has ready tasks.
pub(super) const READY_GROUP_FROM_SQL: &str = include_str!("sql/claim_ready_group_from.sql");
/// The first group after a key (`>`) that has ready tasks.
pub(super) const READY_GROUP_AFTER_SQL: &str = include_str!("sql/claim_ready_group_after.sql");
/// The first group from a key on that has room, and its room, along `groups_open`.
pub(super) const OPEN_GROUP_FROM_SQL: &str = include_str!("sql/claim_open_group_from.sql");

/// When the next delayed ready task becomes due.
pub(super) const NEXT_DUE_SQL: &str = include_str!("sql/claim_next_due.sql");
/// When the next group with a rate and ready tasks gets a token back.
pub(super) const NEXT_RATE_SQL: &str = include_str!("sql/claim_next_rate.sql");
/// When the next held group with ready tasks is let go.
pub(super) const NEXT_HOLD_SQL: &str = include_str!("sql/claim_next_hold.sql");
/// Counts a claim's tasks of one batch as running.
pub(super) const BATCH_TAKE_SQL: &str = include_str!("sql/claim_count_batch.sql");

/// A candidate row: the candidate, its batch's and group's room, its priority, and its
/// tenant's room.
type CandidateRow = (Candidate, Option<i64>, Option<GroupRoom>, i32, Option<i64>);

/// A candidate row read at `now`: its group's room is within its rate's tokens, and none
/// while it is held.
fn candidate_row(r: &rusqlite::Row<'_>, now: Micros) -> rusqlite::Result<CandidateRow> {
    let batch_room: Option<i64> = r.get(4)?;
    let bucket = rate_bucket(r, 7)?;
    let held_until = r.get::<_, Option<i64>>(11)?.unwrap_or(0);
    let group_room = r
        .get::<_, Option<i64>>(5)?
        .map(|room| hold::room(rate::room(room, bucket, now), held_until, now));
    let candidate = Candidate {
        id: r.get(0)?,
        batch: r.get(1)?,
        group: r.get(2)?,
        limited: batch_room.is_some(),
        tenant: r.get(12)?,
        vseq: r.get(3)?,
        cost: r.get(14)?,
    };
    Ok((candidate, batch_room, group_room, r.get(6)?, r.get(13)?))
}

/// The bucket of a group's rate columns `rate_limit`, `rate_period`, `rate_burst`,
/// `rate_tat`, read from `at` on; none without a rate.
fn rate_bucket(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Option<Bucket>> {
    Ok(Bucket::stored(
        r.get(at)?,
        r.get(at + 1)?,
        r.get(at + 2)?,
        r.get::<_, Option<i64>>(at + 3)?.unwrap_or(0),
    ))
}

fn place((c, _, _, priority, _): &CandidateRow) -> Place {
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
    let full_tenants: Vec<TenantId> = rooms
        .tenants
        .iter()
        .filter(|(_, room)| room.is_some_and(|room| room <= 0))
        .map(|(&tenant, _)| tenant)
        .collect();
    let full_tenants = serde_json::to_string(&full_tenants).expect("ids serialize");
    let mut lists: Vec<List> = Vec::new();
    let mut list = |group: Option<String>, rows: &[CandidateRow], limit: i64| {
        if let Some(last) = rows.last().map(place) {
            lists.push((group, rows.len() as i64, limit, last));
        }
    };
    let mut rows: Vec<CandidateRow> = tx
        .prepare_cached(FREE_BEYOND_SQL)
        .map_err(internal)?
        .query_map(
            params![now, priority, vseq, id, need, full, full_tenants],
            |r| candidate_row(r, now),
        )
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
            .query_row(params![group, now], |r| {
                let room = rate::room(r.get(1)?, rate_bucket(r, 2)?, now);
                Ok((r.get::<_, String>(0)?, room))
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
        if room.open() {
            let limit = room.most().min(need);
            let heads: Vec<CandidateRow> = group_beyond
                .query_map(
                    params![now, priority, vseq, id, group, limit, full, full_tenants],
                    |r| {
                        let mut row = candidate_row(r, now)?;
                        row.2 = Some(room);
                        Ok(row)
                    },
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

/// A claim's round of the fair share (`share.rs`): the most it takes of each tenant's
/// tasks (a tenant left out: none), and the fair clock it read.
pub(super) struct Share<'a> {
    pub caps: &'a BTreeMap<TenantId, i64>,
    pub clock: i64,
}

/// Gives `rooms` the room of the batch, group and tenant of a row it has not met yet; a
/// tenant's room is at most what `share` gives it.
fn meet(
    rooms: &mut Rooms,
    share: Option<&Share<'_>>,
    (candidate, batch_room, group_room, _, tenant_room): &CandidateRow,
) {
    rooms.batches.entry(candidate.batch).or_insert(*batch_room);
    if let (Some(group), Some(room)) = (&candidate.group, group_room) {
        rooms.groups.entry(group.clone()).or_insert(*room);
    }
    if let Some(tenant) = candidate.tenant {
        let room = match share {
            None => *tenant_room,
            Some(share) => {
                let cap = share.caps.get(&tenant).copied().unwrap_or(0);
                Some(tenant_room.map_or(cap, |room| room.min(cap)))
            }
        };
        rooms.tenants.entry(tenant).or_insert(room);
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
                    .is_none_or(|g| trial.groups.get(g).is_some_and(GroupRoom::open))
        })
        .map(|&(_, _, _, last)| last)
        .reduce(|a, b| if before(a, b) { a } else { b })
}

/// Takes the picked tasks: leases them to the node.
pub(super) const TAKE_SQL: &str = include_str!("sql/claim_take.sql");
/// A group has `?1` more tasks claimed at `?3`, which cost `?4` tokens; its rate's bucket,
/// if it has one, moves on by as many (`Bucket::take`).
pub(super) const GROUP_TAKE_SQL: &str = "UPDATE groups SET running = running + ?1,
    rate_tat = CASE WHEN rate_limit IS NULL THEN rate_tat
                    ELSE max(rate_tat, ?3) + ?4 * max(1, rate_period / rate_limit) END
    WHERE key = ?2";
/// A tenant has `?1` more tasks claimed; one that had none starts its fair share no lower
/// than the clock `?3` (store/fair.rs). Returns its budget's columns (store/budget.rs).
pub(super) const TENANT_TAKE_SQL: &str = "UPDATE tenants SET running = running + ?1, \
    fair_used = CASE WHEN running = 0 THEN max(fair_used, ?3 * weight) ELSE fair_used END \
    WHERE id = ?2 RETURNING budget_period, cpu_budget, memory_budget, http_budget, \
    budget_window, budget_used, memory_used, http_used";
/// When the next held tenant is let go.
pub(super) const NEXT_TENANT_HOLD_SQL: &str = include_str!("sql/claim_next_tenant_hold.sql");
/// The fair-queueing clock moves to the latest position claimed.
pub(super) const VTIME_SQL: &str = "UPDATE scheduler SET vtime = max(vtime, ?)";

/// Claims up to `p.max` tasks for `p.node`; says when a delayed task becomes due if it
/// took fewer.
pub(super) fn claim(tx: &Transaction<'_>, p: &ClaimParams) -> StoreResult<Claimed> {
    let tasks = super::share::claim_shared(tx, p)?;
    let next_due = if tasks.len() < p.max {
        let due: Option<Micros> = tx
            .prepare_cached(NEXT_DUE_SQL)
            .map_err(internal)?
            .query_row([p.now], |r| r.get(0))
            .map_err(internal)?;
        let token: Option<Micros> = tx
            .prepare_cached(NEXT_RATE_SQL)
            .map_err(internal)?
            .query_row([p.now], |r| r.get(0))
            .map_err(internal)?;
        let hold: Option<Micros> = tx
            .prepare_cached(NEXT_HOLD_SQL)
            .map_err(internal)?
            .query_row([p.now], |r| r.get(0))
            .map_err(internal)?;
        let tenant: Option<Micros> = tx
            .prepare_cached(NEXT_TENANT_HOLD_SQL)
            .map_err(internal)?
            .query_row([p.now], |r| r.get(0))
            .map_err(internal)?;
        [due, token, hold, tenant].into_iter().flatten().min()
    } else {
        None
    };
    Ok(Claimed {
        tasks,
        // One writer at a time: nothing is ever passed over for being held.
        contended: false,
        next_due,
    })
}

/// Reads candidates, picks those their groups, batches and tenants have room for (at most
/// what `share` gives each tenant), and takes them. Returns them in claim order, with
/// their tenants.
pub(super) fn claim_tasks(
    tx: &Transaction<'_>,
    p: &ClaimParams,
    share: Option<&Share<'_>>,
) -> StoreResult<(Vec<ClaimedTask>, Vec<Option<TenantId>>)> {
    if p.max == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    // Room for candidates a group or batch limit turns away within this claim.
    let scan = p.max * 2 + 32;
    let mut rooms = Rooms::default();
    let mut candidates: Vec<Candidate> = Vec::new();
    let add = |rooms: &mut Rooms, candidates: &mut Vec<Candidate>, row: CandidateRow| {
        meet(rooms, share, &row);
        candidates.push(row.0);
    };
    let mut last = None;
    for row in tx
        .prepare_cached(CANDIDATES_SQL)
        .map_err(internal)?
        .query_map(params![p.now, scan as i64], |r| candidate_row(r, p.now))
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
                meet(&mut probe, share, row);
                probe.take(&row.0);
            }
            let frontier = frontier(&lists, &probe);
            // What lies after the frontier, the next look reads again.
            for row in rows
                .into_iter()
                .filter(|row| frontier.is_none_or(|f| !before(f, place(row))))
            {
                meet(&mut trial, share, &row);
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
        return Ok((Vec::new(), Vec::new()));
    }
    // Tokens differ between attempts of a task: a fresh random base for every claim.
    let token_base = random_token() >> 2;
    let expires = p.now + duration_micros(p.lease);
    // One statement takes them all: its cursors on the table and its indexes open once.
    let ids = serde_json::to_string(&picks.iter().map(|c| c.id).collect::<Vec<_>>())
        .expect("ids serialize");
    let mut taken: HashMap<TaskId, ClaimedTask> = HashMap::with_capacity(picks.len());
    let mut take = tx.prepare_cached(TAKE_SQL).map_err(internal)?;
    let rows = take
        .query_map(params![p.now, p.node, token_base, expires, ids], |r| {
            let limits: String = r.get(4)?;
            let mounts: String = r.get(5)?;
            let id: TaskId = r.get(0)?;
            Ok(ClaimedTask {
                id,
                batch: 0,
                module: super::digest_of(r.get(1)?),
                input: r.get(2)?,
                order: r.get(3)?,
                group: None,
                limits: limits::from_stored(&limits),
                mounts: match mounts.as_str() {
                    "[]" => Vec::new(),
                    _ => serde_json::from_str::<Vec<MountGrant>>(&mounts).unwrap_or_default(),
                },
                attempt: r.get(6)?,
                lease_token: token_base + id,
                claimed_at: p.now,
                trace: r.get(7)?,
                budget_left: Left::default(),
            })
        })
        .map_err(internal)?;
    for row in rows {
        let task = row.map_err(internal)?;
        taken.insert(task.id, task);
    }
    // In claim order, which is the order they start in. The counters change once per
    // batch, group and tenant, not once per task: each counts the tasks taken.
    let mut batches: HashMap<BatchId, (i64, i64)> = HashMap::new();
    let mut groups: HashMap<&str, (i64, i64)> = HashMap::new();
    let mut tenants: HashMap<TenantId, i64> = HashMap::new();
    let mut claimed_tenants: Vec<Option<TenantId>> = Vec::with_capacity(picks.len());
    let mut claimed: Vec<ClaimedTask> = Vec::with_capacity(picks.len());
    for pick in &picks {
        let Some(mut task) = taken.remove(&pick.id) else {
            continue;
        };
        let batch = batches.entry(pick.batch).or_insert((0, task.order));
        batch.0 += 1;
        batch.1 = batch.1.max(task.order);
        if let Some(group) = &pick.group {
            let entry = groups.entry(group).or_default();
            entry.0 += 1;
            entry.1 += pick.cost;
        }
        if let Some(tenant) = pick.tenant {
            *tenants.entry(tenant).or_default() += 1;
        }
        claimed_tenants.push(pick.tenant);
        task.batch = pick.batch;
        task.group = pick.group.clone();
        claimed.push(task);
    }
    let latest_vseq = picks.iter().map(|c| c.vseq).max().unwrap_or(0);
    let mut batch_running = tx.prepare_cached(BATCH_TAKE_SQL).map_err(internal)?;
    for (batch, (count, order)) in batches {
        batch_running
            .execute(params![count, order, batch])
            .map_err(internal)?;
    }
    let mut group_running = tx.prepare_cached(GROUP_TAKE_SQL).map_err(internal)?;
    for (group, (count, cost)) in groups {
        group_running
            .execute(params![count, group, p.now, cost])
            .map_err(internal)?;
    }
    let mut tenant_running = tx.prepare_cached(TENANT_TAKE_SQL).map_err(internal)?;
    let mut left: HashMap<TenantId, Left> = HashMap::new();
    for (tenant, count) in tenants {
        let clock = share.map_or(0, |s| s.clock);
        let window = tenant_running
            .query_row(params![count, tenant, clock], |r| {
                super::tenants::window(r, 0)
            })
            .map_err(internal)?;
        left.insert(tenant, window.left(p.now));
    }
    for (task, tenant) in claimed.iter_mut().zip(&claimed_tenants) {
        task.budget_left = tenant
            .and_then(|t| left.get(&t).copied())
            .unwrap_or_default();
    }
    tx.prepare_cached(VTIME_SQL)
        .map_err(internal)?
        .execute([latest_vseq])
        .map_err(internal)?;
    Ok((claimed, claimed_tenants))
}
