//! The claim: how a node takes ready tasks under a lease, and the start mark by which it
//! says it started one (what follows is in `complete.rs`).
//!
//! A claim is one transaction that never waits. It reads a window of the `ready` queue in
//! priority, fair-queueing and submission order (and, when busy or full groups leave the
//! window short, each other group's first tasks and the ungrouped ones behind it, from
//! indexes of their own); takes its batches' gate locks shared (tried, not waited for: a
//! submission is changing that gate); locks the group, batch and limited tenant counters
//! it will consume with `FOR UPDATE SKIP LOCKED` (a counter another claim holds makes that
//! group, batch or tenant full for this one); picks tasks first-fit where the locked
//! counters have room; and locks exactly the picked tasks, `SKIP LOCKED` again. A tenant
//! without a running limit has no room to reserve: its counter is locked only at the
//! claim's end, to count its tasks, after a wait of a few milliseconds at most for another
//! claim's count to commit; past it, its tasks stay queued (`share.rs` divides the claim
//! among tenants). Picks another
//! claim locked first are replaced from the candidates left, a few rounds at most. So
//! concurrent claimers take disjoint tasks without blocking each other, and between them
//! take what one claimer would have (no head-of-line blocking: a blocked task is passed
//! over, never waited on). A taken task moves from `ready` to `leases`; its attempt's end
//! removes the lease (see the schema's version 3 for why these are tables of their own).

use std::collections::{BTreeMap, HashMap, HashSet};

use deadpool_postgres::GenericClient;
use tokio_postgres::error::SqlState;

use super::share::Share;
use super::{Commit, PostgresStore, digest_of, gate, pg};
use crate::runtime::MountGrant;
use crate::store::pick::{Candidate, GroupRoom, Place, Rooms, before};
use crate::store::rate;
use crate::store::*;

/// The head of the queue, nothing locked yet.
pub(super) const WINDOW_SQL: &str = include_str!("sql/claim_window.sql");

/// Ready tasks behind the last one read that the window could not supply.
pub(super) const BEYOND_SQL: &str = include_str!("sql/claim_beyond.sql");

/// Locks the picked tasks that are still ready and no other claim holds. The task row's
/// lock guards its queue and lease rows too: whoever changes a task's state locks its row
/// first. A task whose batch has a `max_parallel` is taken only when this claim holds the
/// batch's counter (`$2`): a limit set (or a pause) since the claim read its window is
/// seen here, under the batch's gate lock that such a change takes.
pub(super) const LOCK_SQL: &str = include_str!("sql/claim_lock.sql");

/// Takes the locked tasks out of the queue and leases them.
pub(super) const TAKE_SQL: &str = include_str!("sql/claim_take.sql");

/// When the next delayed ready task becomes due, along ready_delayed.
pub(super) const NEXT_DUE_SQL: &str =
    "SELECT MIN(not_before) FROM ready WHERE not_before > 0 AND not_before > $1";
/// Locks the counters of the claim's limited batches that no other claim holds.
pub(super) const LOCK_BATCHES_SQL: &str = "SELECT id, max_parallel - running FROM batches \
    WHERE id = ANY($1) ORDER BY id FOR UPDATE SKIP LOCKED";
/// Locks the counters of the claim's groups with room that no other claim holds, with
/// their rates' buckets: a group's tokens are read and spent under its lock, so a rate
/// holds across nodes. A group whose rate has no token at `$2` has no room, nor has one
/// held then (store/hold.rs), and neither is locked.
pub(super) const LOCK_GROUPS_SQL: &str = "SELECT key, lim - running, \
    rate_limit, rate_period, rate_burst, rate_tat FROM groups \
    WHERE key = ANY($1) AND running < lim AND held_until <= $2 AND (rate_limit IS NULL \
        OR rate_tat - (rate_burst - 1) * greatest(1, rate_period / rate_limit) <= $2) \
    ORDER BY key FOR UPDATE SKIP LOCKED";
/// The claim's tenants with their room (NULL: no limit; none while held at `$2`) and
/// their budget's columns (store/budget.rs). The counters of tenants with a running limit
/// are locked, those no other claim holds; the others' are only counted, at the claim's
/// end ([`count_tenants`]): held that briefly, claims of one tenant's work on several
/// nodes do not pass each other over.
pub(super) const LOCK_TENANTS_SQL: &str = include_str!("sql/claim_lock_tenants.sql");
/// When the next held tenant is let go.
pub(super) const NEXT_TENANT_HOLD_SQL: &str =
    "SELECT MIN(held_until) FROM tenants WHERE held_until > 0 AND held_until > $1";
/// When the next group with a rate and ready tasks gets a token back.
pub(super) const NEXT_RATE_SQL: &str = include_str!("sql/claim_next_rate.sql");
/// Counts the claim's groups with room (and a token, if they have a rate, and not held) at
/// `$2`, locked or not.
pub(super) const FREE_GROUPS_SQL: &str = "SELECT COUNT(*) FROM groups \
    WHERE key = ANY($1) AND running < lim AND held_until <= $2 AND (rate_limit IS NULL \
        OR rate_tat - (rate_burst - 1) * greatest(1, rate_period / rate_limit) <= $2)";

/// When the next held group with ready tasks is let go.
pub(super) const NEXT_HOLD_SQL: &str = include_str!("sql/claim_next_hold.sql");

/// When the next ready task held back by its retry delay becomes due, a group with a
/// rate holding ready tasks back gets a token, or a held group with ready tasks is let
/// go, if any is: after `now`, in database time.
async fn next_due(tx: &impl GenericClient, now: Micros) -> StoreResult<Option<Micros>> {
    let (due, rated, held, tenant_held) = tokio::try_join!(
        tx.prepare_cached(NEXT_DUE_SQL),
        tx.prepare_cached(NEXT_RATE_SQL),
        tx.prepare_cached(NEXT_HOLD_SQL),
        tx.prepare_cached(NEXT_TENANT_HOLD_SQL)
    )
    .map_err(pg)?;
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&now];
    let rows = tokio::try_join!(
        tx.query_one(&due, &params),
        tx.query_one(&rated, &params),
        tx.query_one(&held, &params),
        tx.query_one(&tenant_held, &params)
    )
    .map_err(pg)?;
    let (due, token, hold, tenant) = rows;
    Ok([due, token, hold, tenant]
        .iter()
        .filter_map(|row| row.get::<_, Option<Micros>>(0))
        .min())
}

/// Ready tasks a claim reads in queue order at most (see [`claim_in`]).
const WINDOW_MAX: usize = 512;

/// Rounds of picking and locking: each replaces picks another claim locked first.
const PICK_ROUNDS: usize = 4;

/// A candidate with its place in claim order.
fn candidate(r: &tokio_postgres::Row) -> (Candidate, i32) {
    let candidate = Candidate {
        id: r.get(0),
        batch: r.get(1),
        group: r.get(2),
        limited: r.get(3),
        tenant: r.get(6),
        vseq: r.get(4),
        // NULL: 1 (migration 0031).
        cost: r.get::<_, Option<i32>>(7).map_or(1, i64::from),
    };
    (candidate, r.get(5))
}

/// A look behind the window, read: its candidates in claim order with their places, and
/// per list (no group, or one group) how many rows it gave, its limit and its last place.
struct Look {
    read: Vec<(Candidate, Place)>,
    lists: HashMap<Option<String>, (i64, i64, Place)>,
}

impl Look {
    fn of(rows: &[tokio_postgres::Row]) -> Look {
        let mut look = Look {
            read: Vec::with_capacity(rows.len()),
            lists: HashMap::new(),
        };
        for row in rows {
            let (c, priority) = candidate(row);
            let at = (priority, c.vseq, c.id);
            let list = look
                .lists
                .entry(c.group.clone())
                .or_insert((0, row.get(8), at));
            list.0 += 1;
            list.2 = at;
            look.read.push((c, at));
        }
        look
    }

    /// Where the next look starts: the earliest end of a list cut off at its limit that
    /// may have more to give, given the room `trial` leaves (a group with no room left
    /// has nothing more to give this claim). Drops what lies after it, which the next look
    /// reads again; returns the candidates up to it.
    fn cut(self, trial: &Rooms) -> (Vec<Candidate>, Option<Place>) {
        let frontier = self
            .lists
            .iter()
            .filter(|(group, (count, limit, _))| {
                count == limit
                    && group
                        .as_ref()
                        .is_none_or(|g| trial.groups.get(g).is_some_and(GroupRoom::open))
            })
            .map(|(_, &(_, _, last))| last)
            .reduce(|a, b| if before(a, b) { a } else { b });
        let read = self
            .read
            .into_iter()
            .filter(|&(_, at)| frontier.is_none_or(|f| !before(f, at)))
            .map(|(c, _)| c)
            .collect();
        (read, frontier)
    }
}

/// What a claim holds besides tasks: its batches' gates (shared), and the counters of
/// the limited batches, groups and tenants it may consume (locked), with their room.
#[derive(Default)]
struct Held {
    /// Batches whose gate this claim holds; batches tried and refused are absent.
    open_gates: HashSet<BatchId>,
    /// Batches and groups already tried, held or not.
    tried_batches: HashSet<BatchId>,
    tried_groups: HashSet<String>,
    tried_tenants: HashSet<TenantId>,
    rooms: Rooms,
    /// The most of each tenant's tasks this round of the fair share takes (a tenant left
    /// out: none); none: no share.
    caps: Option<BTreeMap<TenantId, i64>>,
    /// What its budget leaves each tenant tried.
    budget_left: HashMap<TenantId, Left>,
    /// Another transaction held a gate or counter this claim wanted.
    contended: bool,
}

impl Held {
    /// Takes the gates and counters `candidates` need that this claim has not tried yet.
    /// Never waits: what another transaction holds is passed over, and remembered as
    /// contention. Groups without room are not locked.
    async fn take(
        &mut self,
        tx: &impl GenericClient,
        candidates: &[Candidate],
        now: Micros,
    ) -> StoreResult<()> {
        let mut batches: Vec<BatchId> = Vec::new();
        let mut limited: Vec<BatchId> = Vec::new();
        let mut groups: Vec<&str> = Vec::new();
        let mut tenants: Vec<TenantId> = Vec::new();
        for c in candidates {
            if let Some(tenant) = c.tenant
                && self.tried_tenants.insert(tenant)
            {
                tenants.push(tenant);
            }
            if self.tried_batches.insert(c.batch) {
                batches.push(c.batch);
                if c.limited {
                    limited.push(c.batch);
                }
            }
            if let Some(group) = c.group.as_deref()
                && !self.tried_groups.contains(group)
            {
                self.tried_groups.insert(group.to_owned());
                groups.push(group);
            }
        }
        batches.sort_unstable();
        limited.sort_unstable();
        groups.sort_unstable();
        tenants.sort_unstable();
        let (lock_batches, lock_groups, free_groups, lock_tenants) = tokio::try_join!(
            tx.prepare_cached(LOCK_BATCHES_SQL),
            tx.prepare_cached(LOCK_GROUPS_SQL),
            tx.prepare_cached(FREE_GROUPS_SQL),
            tx.prepare_cached(LOCK_TENANTS_SQL),
        )
        .map_err(pg)?;
        let (open_gates, batch_rows, group_rows, free, tenant_rows) = tokio::try_join!(
            async {
                if batches.is_empty() {
                    return Ok(Vec::new());
                }
                gate::try_share(tx, &batches).await
            },
            async {
                if limited.is_empty() {
                    return Ok(Vec::new());
                }
                tx.query(&lock_batches, &[&limited]).await.map_err(pg)
            },
            async {
                if groups.is_empty() {
                    return Ok(Vec::new());
                }
                tx.query(&lock_groups, &[&groups, &now]).await.map_err(pg)
            },
            async {
                if groups.is_empty() {
                    return Ok(0);
                }
                let row = tx
                    .query_one(&free_groups, &[&groups, &now])
                    .await
                    .map_err(pg)?;
                Ok(row.get::<_, i64>(0))
            },
            async {
                if tenants.is_empty() {
                    return Ok(Vec::new());
                }
                tx.query(&lock_tenants, &[&tenants, &now]).await.map_err(pg)
            },
        )?;
        self.contended |= open_gates.len() < batches.len()
            || batch_rows.len() < limited.len()
            || (group_rows.len() as i64) < free
            || tenant_rows.len() < tenants.len();
        self.rooms.tenants.extend(tenant_rows.iter().map(|row| {
            let tenant: TenantId = row.get(0);
            let room = row.get::<_, Option<i32>>(1).map(i64::from);
            let room = match &self.caps {
                None => room,
                Some(caps) => {
                    let cap = caps.get(&tenant).copied().unwrap_or(0);
                    Some(room.map_or(cap, |room| room.min(cap)))
                }
            };
            (tenant, room)
        }));
        self.budget_left.extend(
            tenant_rows
                .iter()
                .map(|row| (row.get(0), super::tenants::window(row, 2).left(now))),
        );
        self.open_gates.extend(open_gates);
        self.rooms.batches.extend(
            batch_rows
                .iter()
                .map(|row| (row.get(0), row.get::<_, Option<i32>>(1).map(i64::from))),
        );
        self.rooms.groups.extend(group_rows.iter().map(|row| {
            let counter = i64::from(row.get::<_, i32>(1));
            let bucket = Bucket::stored(
                row.get::<_, Option<i32>>(2).map(i64::from),
                row.get(3),
                row.get::<_, Option<i32>>(4).map(i64::from),
                row.get(5),
            );
            (row.get(0), rate::room(counter, bucket, now))
        }));
        Ok(())
    }
}

/// Claims up to `params.max` ready tasks for `params.node`; says when the next delayed
/// task is due when it claims fewer.
pub(super) async fn claim(store: &PostgresStore, params: ClaimParams) -> StoreResult<Claimed> {
    let params = ClaimParams {
        now: store.db_time(params.now),
        ..params
    };
    let mut claimed = transaction!(store, Commit::Bookkeeping, |tx| {
        super::share::claim_shared(store, tx, &params).await
    })?;
    claimed.next_due = claimed.next_due.map(|at| store.local_time(at));
    Ok(claimed)
}

/// What follows a claim of `taken` tasks: when it took fewer than it could, when the next
/// delayed task is due; when it took all it could, claimable work may be left behind, and
/// nodes with idle slots are told to claim it.
pub(super) async fn follow_up(
    store: &PostgresStore,
    tx: &impl GenericClient,
    p: &ClaimParams,
    taken: usize,
) -> StoreResult<Option<Micros>> {
    if taken < p.max {
        next_due(tx, p.now).await
    } else {
        store.notify(tx, "w").await.map(|()| None)
    }
}

/// The window of a claim of `p.max`: the head of the queue, as many tasks as the claim may
/// take and a few for those a group or batch limit turns away, up to a bound (past it,
/// reading on in the queue's order costs more than asking each group with room for its
/// first tasks).
pub(super) async fn window(
    tx: &impl GenericClient,
    p: &ClaimParams,
) -> StoreResult<Vec<tokio_postgres::Row>> {
    let window = (p.max.min(WINDOW_MAX) + 32) as i64;
    // Walk the ready index in claim order and stop at the limit. Right after a large
    // submission the statistics say the queue is small, and the planner would rather
    // fetch every ready task and sort them: milliseconds per claim on a long queue.
    // Parallel workers and JIT compilation cost more to start than such a walk takes (and
    // the sort the planner may not choose would make every plan look worth compiling).
    // Statements that do not depend on each other go out together (pipelined).
    let stmt = tx.prepare_cached(WINDOW_SQL).await.map_err(pg)?;
    let ((), rows) = tokio::try_join!(
        tx.batch_execute(
            "SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off;
             SET LOCAL max_parallel_workers_per_gather = 0; SET LOCAL jit = off"
        ),
        async { tx.query(&stmt, &[&p.now, &window]).await },
    )
    .map_err(pg)?;
    Ok(rows)
}

/// One claim of up to `p.max` tasks from its `window` ([`window`]), at most `share.caps`
/// of each tenant's when it runs in a fair share's round: what it took, in claim order,
/// with their tenants. The last round (`follow`) says in the same round trip when the next
/// task is due, or tells other nodes to claim.
pub(super) async fn claim_round(
    store: &PostgresStore,
    tx: &impl GenericClient,
    p: &ClaimParams,
    rows: Vec<tokio_postgres::Row>,
    share: Option<&Share>,
    follow: bool,
) -> StoreResult<(Claimed, Vec<Option<TenantId>>)> {
    let then = async |taken: usize| {
        if follow {
            follow_up(store, tx, p, taken).await
        } else {
            Ok(None)
        }
    };
    if p.max == 0 {
        return Ok((Claimed::default(), Vec::new()));
    }
    let window = (p.max.min(WINDOW_MAX) + 32) as i64;
    let mut candidates: Vec<Candidate> = Vec::with_capacity(rows.len());
    let mut last = None;
    for row in &rows {
        let (c, priority) = candidate(row);
        last = Some((priority, c.vseq, c.id));
        candidates.push(c);
    }
    let Some((priority, vseq, id)) = last else {
        let next_due = then(0).await?;
        return Ok((
            Claimed {
                next_due,
                ..Claimed::default()
            },
            Vec::new(),
        ));
    };
    let mut held = Held {
        caps: share.map(|s| s.caps.clone()),
        ..Held::default()
    };
    held.take(tx, &candidates, p.now).await?;

    // A full window that cannot fill the claim (busy, full groups or batches): look behind
    // it, until the claim is filled or nothing claimable is left. Each look either fills
    // the claim, reaches the end, or finds another group or batch full, which the next
    // look passes over.
    if rows.len() as i64 == window {
        let mut after = (priority, vseq, id);
        let stmt = tx.prepare_cached(BEYOND_SQL).await.map_err(pg)?;
        loop {
            let open = candidates
                .iter()
                .filter(|c| held.open_gates.contains(&c.batch));
            let (fits, trial) = held.rooms.trial(open, p.max);
            if fits >= p.max {
                break;
            }
            let filled: Vec<&str> = held
                .tried_groups
                .iter()
                .map(String::as_str)
                .filter(|g| trial.groups.get(*g).is_none_or(|room| !room.open()))
                .collect();
            let mut full: Vec<BatchId> = candidates
                .iter()
                .filter(|c| {
                    c.limited
                        && trial
                            .batches
                            .get(&c.batch)
                            .is_none_or(|room| room.is_some_and(|room| room <= 0))
                })
                .map(|c| c.batch)
                .collect();
            full.sort_unstable();
            full.dedup();
            // Tenants with no room left, or whose counter another claim holds.
            let full_tenants: Vec<TenantId> = held
                .tried_tenants
                .iter()
                .copied()
                .filter(|t| {
                    trial
                        .tenants
                        .get(t)
                        .is_none_or(|room| room.is_some_and(|room| room <= 0))
                })
                .collect();
            let need = (p.max - fits) as i64;
            let (a_priority, a_vseq, a_id) = after;
            let rows = tx
                .query(
                    &stmt,
                    &[
                        &p.now,
                        &a_priority,
                        &a_vseq,
                        &a_id,
                        &need,
                        &filled,
                        &full,
                        &full_tenants,
                    ],
                )
                .await
                .map_err(pg)?;
            let look = Look::of(&rows);
            let read: Vec<Candidate> = look.read.iter().map(|(c, _)| c.clone()).collect();
            held.take(tx, &read, p.now).await?;
            let open = candidates
                .iter()
                .chain(&read)
                .filter(|c| held.open_gates.contains(&c.batch));
            let (_, trial) = held.rooms.trial(open, p.max);
            let (beyond, frontier) = look.cut(&trial);
            candidates.extend(beyond);
            match frontier {
                Some(frontier) => after = frontier,
                None => break,
            }
        }
    }
    let Held {
        open_gates,
        mut rooms,
        mut contended,
        budget_left,
        ..
    } = held;
    let mut candidates: Vec<Candidate> = candidates
        .into_iter()
        .filter(|c| open_gates.contains(&c.batch))
        .collect();

    // Pick first-fit, lock the picks; replace those another claim holds.
    let mut taken: Vec<Candidate> = Vec::new();
    let lock = tx.prepare_cached(LOCK_SQL).await.map_err(pg)?;
    for _ in 0..PICK_ROUNDS {
        let mut trial = rooms.clone();
        let picks: HashSet<usize> = candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| trial.take(c))
            .map(|(i, _)| i)
            .take(p.max - taken.len())
            .collect();
        if picks.is_empty() {
            break;
        }
        let ids: Vec<i64> = picks.iter().map(|&i| candidates[i].id).collect();
        let counted: Vec<BatchId> = rooms.batches.keys().copied().collect();
        let locked: HashSet<i64> = tx
            .query(&lock, &[&ids, &counted])
            .await
            .map_err(pg)?
            .iter()
            .map(|r| r.get(0))
            .collect();
        // Picks are settled either way: taken, or another claim's.
        let mut rest = Vec::with_capacity(candidates.len());
        for (i, c) in std::mem::take(&mut candidates).into_iter().enumerate() {
            if !picks.contains(&i) {
                rest.push(c);
            } else if locked.contains(&c.id) {
                rooms.take(&c);
                taken.push(c);
            }
        }
        candidates = rest;
        if locked.len() == picks.len() || taken.len() == p.max {
            break;
        }
        contended = true;
    }
    // The tenants' counts first: a tenant whose counter another transaction holds past a
    // short wait keeps its tasks queued for the next claim.
    let counted = count_tenants(tx, &taken, share.map_or(0, |s| s.clock)).await?;
    if counted.len()
        < taken
            .iter()
            .filter_map(|c| c.tenant)
            .collect::<HashSet<_>>()
            .len()
    {
        contended = true;
        taken.retain(|c| c.tenant.is_none_or(|t| counted.contains(&t)));
    }
    if taken.is_empty() {
        let next_due = then(0).await?;
        return Ok((
            Claimed {
                contended,
                next_due,
                ..Claimed::default()
            },
            Vec::new(),
        ));
    }
    // Counter changes per limited batch and per group.
    let mut batch_taken: HashMap<BatchId, i32> = HashMap::new();
    let mut group_taken: HashMap<&str, (i32, i64)> = HashMap::new();
    for c in &taken {
        if c.limited {
            *batch_taken.entry(c.batch).or_default() += 1;
        }
        if let Some(group) = c.group.as_deref() {
            let entry = group_taken.entry(group).or_default();
            entry.0 += 1;
            entry.1 += c.cost;
        }
    }
    let taken_count = taken.len();
    let left: HashMap<TaskId, Left> = taken
        .iter()
        .filter_map(|c| Some((c.id, budget_left.get(&c.tenant?).copied()?)))
        .collect();
    let latest_vseq = taken.iter().map(|c| c.vseq).max().unwrap_or(0);
    let tenant_of: HashMap<TaskId, TenantId> = taken
        .iter()
        .filter_map(|c| Some((c.id, c.tenant?)))
        .collect();
    let taken: Vec<i64> = taken.iter().map(|c| c.id).collect();
    let (batch_ids, batch_counts): (Vec<i64>, Vec<i32>) = batch_taken.into_iter().unzip();
    let mut group_keys: Vec<&str> = Vec::with_capacity(group_taken.len());
    let mut group_counts: Vec<i32> = Vec::with_capacity(group_taken.len());
    let mut group_costs: Vec<i64> = Vec::with_capacity(group_taken.len());
    for (key, (count, cost)) in group_taken {
        group_keys.push(key);
        group_counts.push(count);
        group_costs.push(cost);
    }

    let token_base = random_token() >> 2;
    let expires = p.now + duration_micros(p.lease);
    let (take, count_batches, count_groups, clock) = tokio::try_join!(
        tx.prepare_cached(TAKE_SQL),
        tx.prepare_cached(include_str!("sql/claim_count_batches.sql")),
        tx.prepare_cached(include_str!("sql/claim_count_groups.sql")),
        // The fair-queueing clock only moves forward; when another claim holds it, that
        // claim moves it.
        tx.prepare_cached(
            "UPDATE scheduler SET vtime = $1 WHERE id IN
                 (SELECT id FROM scheduler WHERE vtime < $1 FOR UPDATE SKIP LOCKED)",
        ),
    )
    .map_err(pg)?;
    let (rows, .., next_due) = tokio::try_join!(
        async {
            tx.query(&take, &[&p.now, &p.node, &token_base, &expires, &taken])
                .await
                .map_err(pg)
        },
        async {
            if batch_ids.is_empty() {
                return Ok(0);
            }
            tx.execute(&count_batches, &[&batch_ids, &batch_counts])
                .await
                .map_err(pg)
        },
        async {
            if group_keys.is_empty() {
                return Ok(0);
            }
            tx.execute(
                &count_groups,
                &[&group_keys, &group_counts, &p.now, &group_costs],
            )
            .await
            .map_err(pg)
        },
        async { tx.execute(&clock, &[&latest_vseq]).await.map_err(pg) },
        // In the same round trip.
        then(taken_count),
    )?;
    let mut picked: Vec<(i32, i64, ClaimedTask)> = rows
        .iter()
        .map(|r| {
            let limits: &str = r.get(6);
            let mounts: &str = r.get(7);
            let task = ClaimedTask {
                id: r.get(0),
                batch: r.get(1),
                module: digest_of(r.get(2)),
                input: r.get(3),
                order: r.get(4),
                group: r.get(5),
                limits: limits::from_stored(limits),
                mounts: serde_json::from_str::<Vec<MountGrant>>(mounts).unwrap_or_default(),
                attempt: r.get::<_, i32>(8) as u32,
                lease_token: r.get(9),
                claimed_at: p.now,
                trace: r.get(12),
                budget_left: Left::default(),
            };
            (r.get(10), r.get(11), task)
        })
        .collect();
    for (_, _, task) in &mut picked {
        task.budget_left = left.get(&task.id).copied().unwrap_or_default();
    }
    picked.sort_by_key(|(priority, vseq, task)| (-priority, *vseq, task.id));
    let tenants = picked
        .iter()
        .map(|(_, _, task)| tenant_of.get(&task.id).copied())
        .collect();
    let claimed = Claimed {
        tasks: picked.into_iter().map(|(_, _, task)| task).collect(),
        contended,
        next_due,
    };
    Ok((claimed, tenants))
}

/// Counts claimed tasks in their tenants (`sql/claim_count_tenants.sql`).
const COUNT_TENANTS_SQL: &str = include_str!("sql/claim_count_tenants.sql");

/// The same, passing over the counters another transaction holds.
static COUNT_FREE_TENANTS_SQL: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| COUNT_TENANTS_SQL.replace("FOR UPDATE", "FOR UPDATE SKIP LOCKED"));

/// How long a claim waits for a tenant's counter: another claim counting in it commits
/// within a round trip or two. A wait no longer than this also ends any deadlock it is
/// part of (completions lock tenants last, claims lock limited ones first).
const COUNT_WAIT: &str = "20ms";

/// Counts `taken` in their tenants; one that had none starts its fair share no lower than
/// `clock`. A counter another transaction holds is waited for, [`COUNT_WAIT`] at most,
/// then passed over. Returns the tenants counted.
async fn count_tenants(
    tx: &impl GenericClient,
    taken: &[Candidate],
    clock: i64,
) -> StoreResult<HashSet<TenantId>> {
    let mut counts: BTreeMap<TenantId, i32> = BTreeMap::new();
    for tenant in taken.iter().filter_map(|c| c.tenant) {
        *counts.entry(tenant).or_default() += 1;
    }
    if counts.is_empty() {
        return Ok(HashSet::new());
    }
    let (ids, counts): (Vec<TenantId>, Vec<i32>) = counts.into_iter().unzip();
    let stmt = tx.prepare_cached(COUNT_TENANTS_SQL).await.map_err(pg)?;
    let bound = format!("SAVEPOINT counting; SET LOCAL lock_timeout = '{COUNT_WAIT}'");
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] = [&ids, &counts, &clock];
    let (bounded, waited) = tokio::join!(tx.batch_execute(&bound), tx.query(&stmt, &params));
    bounded.map_err(pg)?;
    let rows = match waited {
        Ok(rows) => {
            tx.batch_execute("RELEASE SAVEPOINT counting; SET LOCAL lock_timeout = 0")
                .await
                .map_err(pg)?;
            rows
        }
        Err(e) if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => {
            tx.batch_execute("ROLLBACK TO SAVEPOINT counting; SET LOCAL lock_timeout = 0")
                .await
                .map_err(pg)?;
            let stmt = tx
                .prepare_cached(&COUNT_FREE_TENANTS_SQL)
                .await
                .map_err(pg)?;
            tx.query(&stmt, &params).await.map_err(pg)?
        }
        Err(e) => return Err(pg(e)),
    };
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Marks claimed tasks started: reserved becomes running.
pub(super) async fn start(store: &PostgresStore, starts: Vec<Start>) -> StoreResult<()> {
    let mut starts = starts;
    // One order of row locking across transactions.
    starts.sort_unstable_by_key(|s| s.task);
    let ids: Vec<i64> = starts.iter().map(|s| s.task).collect();
    let tokens: Vec<i64> = starts.iter().map(|s| s.lease_token).collect();
    let at: Vec<i64> = starts.iter().map(|s| store.db_time(s.at)).collect();
    let batches: Vec<BatchId> = starts.iter().map(|s| s.batch).collect();
    transaction!(store, Commit::Bookkeeping, |tx| {
        let stmt = tx
            .prepare_cached(include_str!("sql/task_start.sql"))
            .await
            .map_err(pg)?;
        tx.execute(&stmt, &[&ids, &tokens, &at]).await.map_err(pg)?;
        store.notify_started(tx, batches.clone()).await?;
        Ok(())
    })
}
