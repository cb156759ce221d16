//! The scheduling core in PostgreSQL: the atomic claim, completions, lease rescue and
//! the execution log.
//!
//! A claim is one transaction that never waits. It reads a window of the `ready` queue in
//! priority, fair-queueing and submission order (and, when busy or full groups leave the
//! window short, each other group's first tasks and the ungrouped ones behind it, from
//! indexes of their own); takes its batches' gate locks shared (tried, not waited for: a
//! submission is changing that gate); locks the group and batch counters it will consume
//! with `FOR UPDATE SKIP LOCKED` (a counter another claim holds makes that group or batch
//! full for this one); picks tasks first-fit where the locked counters have room; and
//! locks exactly the picked tasks, `SKIP LOCKED` again. Picks another claim locked first
//! are replaced from the candidates left, a few rounds at most. So concurrent claimers
//! take disjoint tasks without blocking each other, and between them take what one
//! claimer would have (no head-of-line blocking: a blocked task is passed over, never
//! waited on). A taken task moves from `ready` to `leases`; its attempt's end removes the
//! lease (see the schema's version 3 for why these are tables of their own).

use std::collections::{HashMap, HashSet};

use deadpool_postgres::GenericClient;

use super::{digest_of, gate, pg};
use crate::runtime::{MountGrant, Outcome, TaskLimits};
use crate::store::pick::{Candidate, Place, Rooms, before};
use crate::store::*;

/// The head of the queue: ready tasks in claim order, of batches with room; nothing
/// locked yet. Groups are not looked at here: a claim locks the counters of the groups
/// it meets anyway, and learns their room from that.
const WINDOW_SQL: &str = "
SELECT r.task_id, r.batch_id, r.group_key, b.max_parallel IS NOT NULL, r.vseq, r.priority
FROM ready r
JOIN batches b ON b.id = r.batch_id
WHERE r.not_before <= $1
  AND (b.max_parallel IS NULL OR b.running < b.max_parallel)
ORDER BY r.priority DESC, r.vseq, r.task_id
LIMIT $2";

/// Ready tasks behind the last one read (priority `$2`, vseq `$3`, id `$4`) that the
/// window could not supply: tasks without a group (at most `$5`), and the first tasks of
/// every group with room (at most `$5` each), but those already filled (`$6`), none of the
/// batches already full (`$7`). Each row carries the limit its list was read with, so
/// that a list cut off by it can be read on. Walks two short indexes, never the tasks of
/// busy groups: so a claim costs what it can take, however many tasks wait behind a busy
/// group.
const BEYOND_SQL: &str = "
SELECT * FROM (
  (SELECT r.task_id, r.batch_id, r.group_key, b.max_parallel IS NOT NULL, r.vseq, r.priority,
          $5::bigint AS lim
   FROM ready r
   JOIN batches b ON b.id = r.batch_id
   WHERE r.group_key IS NULL AND r.not_before <= $1
     AND (r.priority < $2 OR (r.priority = $2 AND (r.vseq, r.task_id) > ($3, $4)))
     AND (b.max_parallel IS NULL OR b.running < b.max_parallel)
     AND NOT (r.batch_id = ANY($7::bigint[]))
   ORDER BY r.priority DESC, r.vseq, r.task_id
   LIMIT $5)
  UNION ALL
  (SELECT h.*
   FROM groups g
   LEFT JOIN unnest($6::text[]) AS filled(key) ON filled.key = g.key
   CROSS JOIN LATERAL (
     SELECT r.task_id, r.batch_id, r.group_key, b.max_parallel IS NOT NULL, r.vseq, r.priority,
            least(g.lim - g.running, $5)::bigint AS lim
     FROM ready r
     JOIN batches b ON b.id = r.batch_id
     WHERE r.group_key = g.key AND r.not_before <= $1
       AND (r.priority < $2 OR (r.priority = $2 AND (r.vseq, r.task_id) > ($3, $4)))
       AND (b.max_parallel IS NULL OR b.running < b.max_parallel)
       AND NOT (r.batch_id = ANY($7::bigint[]))
     ORDER BY r.priority DESC, r.vseq, r.task_id
     LIMIT least(g.lim - g.running, $5)) AS h
   WHERE g.running < g.lim AND filled.key IS NULL)
) AS beyond
ORDER BY 6 DESC, 5, 1";

/// Locks the picked tasks that are still ready and no other claim holds. The task row's
/// lock guards its queue and lease rows too: whoever changes a task's state locks its row
/// first.
const LOCK_SQL: &str = "
SELECT id FROM tasks WHERE id = ANY($1) AND state = 1 ORDER BY id FOR UPDATE SKIP LOCKED";

/// Takes the locked tasks out of the queue and leases them.
const TAKE_SQL: &str = "
WITH queued AS (DELETE FROM ready WHERE task_id = ANY($5) RETURNING task_id),
     leased AS (INSERT INTO leases (task_id, node, expires) SELECT task_id, $2, $4 FROM queued)
UPDATE tasks SET state = 2, attempts = attempts + 1, claimed_at = $1, lease_node = $2,
    lease_token = $3 + id
WHERE id = ANY($5)
RETURNING id, batch_id, module, input, ord, group_key, limits, mounts, attempts, lease_token,
    priority, vseq";

/// When the next ready task held back by its retry delay becomes due, if any is: after
/// `now`, in database time.
pub(super) async fn next_due(tx: &impl GenericClient, now: Micros) -> StoreResult<Option<Micros>> {
    let stmt = tx
        .prepare_cached(
            "SELECT MIN(not_before) FROM ready WHERE not_before > 0 AND not_before > $1",
        )
        .await
        .map_err(pg)?;
    Ok(tx.query_one(&stmt, &[&now]).await.map_err(pg)?.get(0))
}

/// Ready tasks a claim reads in queue order at most (see [`claim`]).
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
        vseq: r.get(4),
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
                .or_insert((0, row.get(6), at));
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
                        .is_none_or(|g| trial.groups.get(g).is_some_and(|room| *room > 0))
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
/// the limited batches and groups it may consume (locked), with their room.
#[derive(Default)]
struct Held {
    /// Batches whose gate this claim holds; batches tried and refused are absent.
    open_gates: HashSet<BatchId>,
    /// Batches and groups already tried, held or not.
    tried_batches: HashSet<BatchId>,
    tried_groups: HashSet<String>,
    rooms: Rooms,
    /// Another transaction held a gate or counter this claim wanted.
    contended: bool,
}

impl Held {
    /// Takes the gates and counters `candidates` need that this claim has not tried yet.
    /// Never waits: what another transaction holds is passed over, and remembered as
    /// contention. Groups without room are not locked.
    async fn take(&mut self, tx: &impl GenericClient, candidates: &[Candidate]) -> StoreResult<()> {
        let mut batches: Vec<BatchId> = Vec::new();
        let mut limited: Vec<BatchId> = Vec::new();
        let mut groups: Vec<&str> = Vec::new();
        for c in candidates {
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
        let (lock_batches, lock_groups, free_groups) = tokio::try_join!(
            tx.prepare_cached(
                "SELECT id, max_parallel - running FROM batches
                 WHERE id = ANY($1) ORDER BY id FOR UPDATE SKIP LOCKED",
            ),
            tx.prepare_cached(
                "SELECT key, lim - running FROM groups
                 WHERE key = ANY($1) AND running < lim ORDER BY key FOR UPDATE SKIP LOCKED",
            ),
            tx.prepare_cached("SELECT COUNT(*) FROM groups WHERE key = ANY($1) AND running < lim"),
        )
        .map_err(pg)?;
        let (open_gates, batch_rows, group_rows, free) = tokio::try_join!(
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
                tx.query(&lock_groups, &[&groups]).await.map_err(pg)
            },
            async {
                if groups.is_empty() {
                    return Ok(0);
                }
                let row = tx.query_one(&free_groups, &[&groups]).await.map_err(pg)?;
                Ok(row.get::<_, i64>(0))
            },
        )?;
        self.contended |= open_gates.len() < batches.len()
            || batch_rows.len() < limited.len()
            || (group_rows.len() as i64) < free;
        self.open_gates.extend(open_gates);
        self.rooms.batches.extend(
            batch_rows
                .iter()
                .map(|row| (row.get(0), row.get::<_, Option<i32>>(1).map(i64::from))),
        );
        self.rooms.groups.extend(
            group_rows
                .iter()
                .map(|row| (row.get(0), i64::from(row.get::<_, i32>(1)))),
        );
        Ok(())
    }
}

pub(super) async fn claim(tx: &impl GenericClient, p: &ClaimParams) -> StoreResult<Claimed> {
    if p.max == 0 {
        return Ok(Claimed::default());
    }
    // The window: as many tasks as the claim may take, and a few for those a group or
    // batch limit turns away, up to a bound: past it, reading on in the queue's order
    // costs more than asking each group with room for its first tasks.
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
    let mut candidates: Vec<Candidate> = Vec::with_capacity(rows.len());
    let mut last = None;
    for row in &rows {
        let (c, priority) = candidate(row);
        last = Some((priority, c.vseq, c.id));
        candidates.push(c);
    }
    let Some((priority, vseq, id)) = last else {
        return Ok(Claimed::default());
    };
    let mut held = Held::default();
    held.take(tx, &candidates).await?;

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
                .filter(|g| trial.groups.get(*g).is_none_or(|room| *room <= 0))
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
            let need = (p.max - fits) as i64;
            let (a_priority, a_vseq, a_id) = after;
            let rows = tx
                .query(
                    &stmt,
                    &[&p.now, &a_priority, &a_vseq, &a_id, &need, &filled, &full],
                )
                .await
                .map_err(pg)?;
            let look = Look::of(&rows);
            let read: Vec<Candidate> = look.read.iter().map(|(c, _)| c.clone()).collect();
            held.take(tx, &read).await?;
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
        let locked: HashSet<i64> = tx
            .query(&lock, &[&ids])
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
    if taken.is_empty() {
        return Ok(Claimed {
            contended,
            ..Claimed::default()
        });
    }
    // Counter changes per limited batch and per group.
    let mut batch_taken: HashMap<BatchId, i32> = HashMap::new();
    let mut group_taken: HashMap<&str, i32> = HashMap::new();
    for c in &taken {
        if c.limited {
            *batch_taken.entry(c.batch).or_default() += 1;
        }
        if let Some(group) = c.group.as_deref() {
            *group_taken.entry(group).or_default() += 1;
        }
    }
    let latest_vseq = taken.iter().map(|c| c.vseq).max().unwrap_or(0);
    let taken: Vec<i64> = taken.iter().map(|c| c.id).collect();
    let (batch_ids, batch_counts): (Vec<i64>, Vec<i32>) = batch_taken.into_iter().unzip();
    let (group_keys, group_counts): (Vec<&str>, Vec<i32>) = group_taken.into_iter().unzip();

    let token_base = random_token() >> 2;
    let expires = p.now + duration_micros(p.lease);
    let (take, count_batches, count_groups, clock) = tokio::try_join!(
        tx.prepare_cached(TAKE_SQL),
        tx.prepare_cached(
            "UPDATE batches AS b SET running = b.running + u.n
             FROM unnest($1::bigint[], $2::int[]) AS u(id, n) WHERE b.id = u.id",
        ),
        tx.prepare_cached(
            "UPDATE groups AS g SET running = g.running + u.n
             FROM unnest($1::text[], $2::int[]) AS u(key, n) WHERE g.key = u.key",
        ),
        // The fair-queueing clock only moves forward; when another claim holds it, that
        // claim moves it.
        tx.prepare_cached(
            "UPDATE scheduler SET vtime = $1 WHERE id IN
                 (SELECT id FROM scheduler WHERE vtime < $1 FOR UPDATE SKIP LOCKED)",
        ),
    )
    .map_err(pg)?;
    let (rows, ..) = tokio::try_join!(
        async {
            tx.query(&take, &[&p.now, &p.node, &token_base, &expires, &taken])
                .await
        },
        async {
            if batch_ids.is_empty() {
                return Ok(0);
            }
            tx.execute(&count_batches, &[&batch_ids, &batch_counts])
                .await
        },
        async {
            if group_keys.is_empty() {
                return Ok(0);
            }
            tx.execute(&count_groups, &[&group_keys, &group_counts])
                .await
        },
        async { tx.execute(&clock, &[&latest_vseq]).await },
    )
    .map_err(pg)?;
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
                limits: serde_json::from_str::<TaskLimits>(limits).unwrap_or_default(),
                mounts: serde_json::from_str::<Vec<MountGrant>>(mounts).unwrap_or_default(),
                attempt: r.get::<_, i32>(8) as u32,
                lease_token: r.get(9),
                claimed_at: p.now,
            };
            (r.get(10), r.get(11), task)
        })
        .collect();
    picked.sort_by_key(|(priority, vseq, task)| (-priority, *vseq, task.id));
    Ok(Claimed {
        tasks: picked.into_iter().map(|(_, _, task)| task).collect(),
        contended,
        next_due: None,
    })
}

/// What the completion of an attempt needs to know about its task.
struct Running {
    id: TaskId,
    batch: BatchId,
    order: i64,
    group: Option<String>,
    attempts: i32,
    max_attempts: i32,
    backoff_ms: i64,
    cancel_requested: bool,
    lease_token: i64,
    lease_node: String,
    /// When it started on its slot, or else when it was claimed.
    started_at: Micros,
    limited: bool,
    halts: bool,
}

const RUNNING_SQL: &str = "
SELECT t.id, t.batch_id, t.ord, t.group_key, t.attempts, t.max_attempts, t.backoff_ms,
       t.cancel_requested, t.lease_token, t.lease_node,
       coalesce((SELECT started_at FROM leases WHERE task_id = t.id), t.claimed_at),
       b.max_parallel IS NOT NULL, b.halt_on_failure
FROM tasks t JOIN batches b ON b.id = t.batch_id
WHERE t.state = 2";

fn running_row(r: &tokio_postgres::Row) -> Running {
    Running {
        id: r.get(0),
        batch: r.get(1),
        order: r.get(2),
        group: r.get(3),
        attempts: r.get(4),
        max_attempts: r.get(5),
        backoff_ms: r.get(6),
        cancel_requested: r.get(7),
        lease_token: r.get(8),
        lease_node: r.get(9),
        started_at: r.get(10),
        limited: r.get(11),
        halts: r.get(12),
    }
}

/// Slots a set of ended attempts frees, summed per batch and group, written in one
/// statement each.
#[derive(Default)]
struct Freed {
    batches: HashMap<BatchId, i32>,
    groups: HashMap<String, i32>,
}

impl Freed {
    fn add(&mut self, task: &Running) {
        if task.limited {
            *self.batches.entry(task.batch).or_default() += 1;
        }
        if let Some(group) = &task.group {
            *self.groups.entry(group.clone()).or_default() += 1;
        }
    }

    async fn write(self, tx: &impl GenericClient) -> StoreResult<()> {
        if !self.batches.is_empty() {
            let mut rows: Vec<(i64, i32)> = self.batches.into_iter().collect();
            rows.sort_unstable();
            let (ids, counts): (Vec<i64>, Vec<i32>) = rows.into_iter().unzip();
            let stmt = tx
                .prepare_cached(
                    "UPDATE batches AS b SET running = b.running - u.n
                     FROM unnest($1::bigint[], $2::int[]) AS u(id, n) WHERE b.id = u.id",
                )
                .await
                .map_err(pg)?;
            tx.execute(&stmt, &[&ids, &counts]).await.map_err(pg)?;
        }
        if !self.groups.is_empty() {
            let mut rows: Vec<(String, i32)> = self.groups.into_iter().collect();
            rows.sort_unstable();
            let (keys, counts): (Vec<String>, Vec<i32>) = rows.into_iter().unzip();
            let stmt = tx
                .prepare_cached(
                    "UPDATE groups AS g SET running = g.running - u.n
                     FROM unnest($1::text[], $2::int[]) AS u(key, n) WHERE g.key = u.key",
                )
                .await
                .map_err(pg)?;
            tx.execute(&stmt, &[&keys, &counts]).await.map_err(pg)?;
        }
        Ok(())
    }
}

/// Deletes the leases of tasks whose attempt ended.
async fn drop_leases(tx: &impl GenericClient, tasks: &[TaskId]) -> StoreResult<()> {
    if tasks.is_empty() {
        return Ok(());
    }
    let stmt = tx
        .prepare_cached("DELETE FROM leases WHERE task_id = ANY($1)")
        .await
        .map_err(pg)?;
    tx.execute(&stmt, &[&tasks]).await.map_err(pg)?;
    Ok(())
}

/// Attempt records, written in one statement.
#[derive(Default)]
struct AttemptRows<'a> {
    task: Vec<i64>,
    batch: Vec<i64>,
    attempt: Vec<i32>,
    node: Vec<&'a str>,
    slot: Vec<Option<i32>>,
    token: Vec<i64>,
    group: Vec<Option<String>>,
    order: Vec<i64>,
    started: Vec<i64>,
    ended: Vec<i64>,
    outcome: Vec<&'static str>,
    error: Vec<Option<&'a str>>,
    logs: Vec<Option<String>>,
    stdout: Vec<Option<&'a [u8]>>,
    stderr: Vec<Option<&'a [u8]>>,
}

impl<'a> AttemptRows<'a> {
    fn push(&mut self, task: &Running, end: AttemptEnd<'a>) {
        self.task.push(task.id);
        self.batch.push(task.batch);
        self.attempt.push(task.attempts);
        self.node.push(end.node);
        self.slot.push(end.slot.map(|s| s as i32));
        self.token.push(task.lease_token);
        self.group.push(task.group.clone());
        self.order.push(task.order);
        self.started.push(end.started_at);
        self.ended.push(end.ended_at);
        self.outcome.push(end.outcome.as_str());
        self.error.push(end.error);
        self.logs.push(
            (!end.logs.is_empty())
                .then(|| serde_json::to_string(end.logs).expect("logs serialize")),
        );
        self.stdout
            .push((!end.stdout.is_empty()).then_some(end.stdout));
        self.stderr
            .push((!end.stderr.is_empty()).then_some(end.stderr));
    }

    async fn write(&self, tx: &impl GenericClient) -> StoreResult<()> {
        if self.task.is_empty() {
            return Ok(());
        }
        let stmt = tx
            .prepare_cached(
                "INSERT INTO attempts (task_id, batch_id, attempt, node, slot, lease_token,
                     group_key, ord, started_at, ended_at, outcome, error, logs, stdout, stderr)
                 SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::text[],
                     $5::int[], $6::bigint[], $7::text[], $8::bigint[], $9::bigint[],
                     $10::bigint[], $11::text[], $12::text[], $13::text[], $14::bytea[],
                     $15::bytea[])",
            )
            .await
            .map_err(pg)?;
        tx.execute(
            &stmt,
            &[
                &self.task,
                &self.batch,
                &self.attempt,
                &self.node,
                &self.slot,
                &self.token,
                &self.group,
                &self.order,
                &self.started,
                &self.ended,
                &self.outcome,
                &self.error,
                &self.logs,
                &self.stdout,
                &self.stderr,
            ],
        )
        .await
        .map_err(pg)?;
        Ok(())
    }
}

/// What ending a set of attempts writes besides the tasks themselves: their attempt
/// records, the slots they free, the orders they close, the batches they halt.
#[derive(Default)]
struct Ending<'a> {
    attempts: AttemptRows<'a>,
    freed: Freed,
    closed: Vec<(BatchId, i64, i64)>,
    halted: Vec<(BatchId, TaskId)>,
}

impl<'a> Ending<'a> {
    /// A success, its task already ended.
    fn succeeded(&mut self, task: &Running, end: AttemptEnd<'a>, result: &mut CompleteResult) {
        self.attempts.push(task, end);
        self.freed.add(task);
        self.closed.push((task.batch, task.order, 1));
        result.ended.push((task.id, task.batch));
    }

    /// Any other end: the task is retried, or ends failed or cancelled.
    async fn other(
        &mut self,
        tx: &impl GenericClient,
        task: &Running,
        end: AttemptEnd<'a>,
        now: Micros,
        result: &mut CompleteResult,
    ) -> StoreResult<()> {
        let (outcome, error) = (end.outcome, end.error.map(str::to_owned));
        self.attempts.push(task, end);
        self.freed.add(task);
        if let Some(state) = finish(tx, task, outcome, error, now, result).await? {
            self.closed.push((task.batch, task.order, 1));
            if state == TaskState::Failed && task.halts {
                self.halted.push((task.batch, task.id));
            }
        }
        Ok(())
    }

    async fn write(self, tx: &impl GenericClient, now: Micros) -> StoreResult<()> {
        tokio::try_join!(
            self.attempts.write(tx),
            drop_leases(tx, &self.attempts.task),
            self.freed.write(tx),
            gate::close(tx, &self.closed),
        )?;
        for (batch, task) in self.halted {
            let reason = format!("cancelled: task {task} failed and the batch halts on failure");
            gate::cancel_pending(tx, batch, now, &reason).await?;
        }
        Ok(())
    }
}

/// Ends attempts: successes in a few statements for all of them; the rest (retries,
/// failures, cancellations) one task at a time.
pub(super) async fn complete(
    tx: &impl GenericClient,
    completions: &[Completion],
    now: Micros,
) -> StoreResult<CompleteResult> {
    let mut result = CompleteResult::default();
    let mut ending = Ending::default();
    let mut succeeded: Vec<&Completion> = completions
        .iter()
        .filter(|c| c.outcome.is_success())
        .collect();
    // One order of row locking across transactions.
    succeeded.sort_by_key(|c| c.task);
    if !succeeded.is_empty() {
        let ids: Vec<i64> = succeeded.iter().map(|c| c.task).collect();
        let tokens: Vec<i64> = succeeded.iter().map(|c| c.lease_token).collect();
        let outputs: Vec<Option<&[u8]>> = succeeded.iter().map(|c| c.output.as_deref()).collect();
        let stmt = tx
            .prepare_cached(
                "UPDATE tasks AS t SET state = 3, ended_at = $1, outcome = 'succeeded',
                     error = NULL, output = u.output,
                     lease_node = NULL, lease_token = NULL
                 FROM unnest($2::bigint[], $3::bigint[], $4::bytea[]) AS u(id, token, output),
                     batches AS b
                 WHERE t.id = u.id AND t.state = 2 AND t.lease_token = u.token
                     AND b.id = t.batch_id
                 RETURNING t.id, t.batch_id, t.ord, t.group_key, t.attempts,
                     b.max_parallel IS NOT NULL",
            )
            .await
            .map_err(pg)?;
        let rows = tx
            .query(&stmt, &[&now, &ids, &tokens, &outputs])
            .await
            .map_err(pg)?;
        let by_id: HashMap<TaskId, &Completion> = succeeded.iter().map(|c| (c.task, *c)).collect();
        for r in &rows {
            let c = by_id[&r.get::<_, i64>(0)];
            let task = Running {
                id: c.task,
                batch: r.get(1),
                order: r.get(2),
                group: r.get(3),
                attempts: r.get(4),
                max_attempts: 0,
                backoff_ms: 0,
                cancel_requested: false,
                lease_token: c.lease_token,
                lease_node: String::new(),
                started_at: 0,
                limited: r.get(5),
                halts: false,
            };
            ending.succeeded(&task, AttemptEnd::of(c), &mut result);
        }
        result.stale += succeeded.len() - rows.len();
    }

    // Applied in the order reported (a halt reaches what comes after it); the rows are
    // locked in one order across transactions.
    let others: Vec<&Completion> = completions
        .iter()
        .filter(|c| !c.outcome.is_success())
        .collect();
    if !others.is_empty() {
        let ids: Vec<i64> = others.iter().map(|c| c.task).collect();
        let sql = format!("{RUNNING_SQL} AND t.id = ANY($1) ORDER BY t.id FOR UPDATE OF t");
        let running: HashMap<TaskId, Running> = tx
            .query(&sql, &[&ids])
            .await
            .map_err(pg)?
            .iter()
            .map(|r| {
                let task = running_row(r);
                (task.id, task)
            })
            .collect();
        for c in others {
            let Some(task) = running
                .get(&c.task)
                .filter(|t| t.lease_token == c.lease_token)
            else {
                result.stale += 1;
                continue;
            };
            ending
                .other(tx, task, AttemptEnd::of(c), now, &mut result)
                .await?;
        }
    }
    ending.write(tx, now).await?;
    Ok(result)
}

/// Ends a task that did not succeed, or puts it back for another attempt; returns the
/// state it ended in. Its slots are freed by the caller.
async fn finish(
    tx: &impl GenericClient,
    task: &Running,
    outcome: Outcome,
    error: Option<String>,
    now: Micros,
    result: &mut CompleteResult,
) -> StoreResult<Option<TaskState>> {
    let may_retry = outcome != Outcome::Cancelled
        && !task.cancel_requested
        && task.attempts < task.max_attempts;
    let halted = may_retry
        && task.halts
        && tx
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM tasks WHERE batch_id = $1 AND state = 4)",
                &[&task.batch],
            )
            .await
            .map_err(pg)?
            .get::<_, bool>(0);
    let retry = may_retry && !halted;
    if retry {
        let not_before = now + backoff_micros(task.backoff_ms, task.attempts as u32);
        let stmt = tx
            .prepare_cached(
                "WITH back AS (
                     UPDATE tasks SET state = 1, not_before = $1, outcome = $2, error = $3,
                         lease_node = NULL, lease_token = NULL
                     WHERE id = $4
                     RETURNING id, batch_id, group_key, priority, vseq, not_before)
                 INSERT INTO ready (task_id, batch_id, group_key, priority, vseq, not_before)
                 SELECT * FROM back",
            )
            .await
            .map_err(pg)?;
        tx.execute(&stmt, &[&not_before, &outcome.as_str(), &error, &task.id])
            .await
            .map_err(pg)?;
        result.retried += 1;
        return Ok(None);
    }
    let (state, outcome, error) = if halted {
        (
            TaskState::Cancelled,
            Outcome::Cancelled,
            Some(HALTED.into()),
        )
    } else if outcome == Outcome::Cancelled || task.cancel_requested {
        (
            TaskState::Cancelled,
            Outcome::Cancelled,
            error.or(Some("cancelled while running".into())),
        )
    } else {
        (TaskState::Failed, outcome, error)
    };
    let stmt = tx
        .prepare_cached(
            "UPDATE tasks SET state = $1, ended_at = $2, outcome = $3, error = $4, output = NULL,
                 lease_node = NULL, lease_token = NULL
             WHERE id = $5",
        )
        .await
        .map_err(pg)?;
    tx.execute(
        &stmt,
        &[
            &(state.code() as i32),
            &now,
            &outcome.as_str(),
            &error,
            &task.id,
        ],
    )
    .await
    .map_err(pg)?;
    result.ended.push((task.id, task.batch));
    Ok(Some(state))
}

/// Ends as `lost` the attempts whose lease expired (or all of `node`'s), retrying their
/// tasks while attempts remain. Rows another transaction holds are left for the next
/// rescue.
pub(super) async fn rescue(
    tx: &impl GenericClient,
    node: Option<&str>,
    now: Micros,
) -> StoreResult<CompleteResult> {
    let mut result = CompleteResult::default();
    let sql = format!(
        "{RUNNING_SQL}
         AND t.id IN (SELECT task_id FROM leases WHERE expires < $1 OR node = $2)
         ORDER BY t.id FOR UPDATE OF t SKIP LOCKED"
    );
    let lost: Vec<Running> = tx
        .query(&sql, &[&now, &node])
        .await
        .map_err(pg)?
        .iter()
        .map(running_row)
        .collect();
    let errors: Vec<String> = lost
        .iter()
        .map(|task| {
            if Some(task.lease_node.as_str()) == node {
                format!("node {} restarted while the attempt ran", task.lease_node)
            } else {
                format!(
                    "node {} stopped renewing the attempt's lease",
                    task.lease_node
                )
            }
        })
        .collect();
    let mut ending = Ending::default();
    for (task, error) in lost.iter().zip(&errors) {
        let end = AttemptEnd {
            node: &task.lease_node,
            slot: None,
            started_at: task.started_at,
            ended_at: now,
            outcome: Outcome::Lost,
            error: Some(error),
            logs: &[],
            stdout: &[],
            stderr: &[],
        };
        ending.other(tx, task, end, now, &mut result).await?;
    }
    ending.write(tx, now).await?;
    Ok(result)
}

/// Puts claimed tasks back as they were before the claim, attempt not counted; those whose
/// cancellation was asked end cancelled instead.
pub(super) async fn release(
    tx: &impl GenericClient,
    tasks: &[(TaskId, i64)],
    now: Micros,
) -> StoreResult<CompleteResult> {
    let mut tasks = tasks.to_vec();
    tasks.sort_unstable();
    let ids: Vec<i64> = tasks.iter().map(|&(id, _)| id).collect();
    let sql = format!("{RUNNING_SQL} AND t.id = ANY($1) ORDER BY t.id FOR UPDATE OF t");
    let running: Vec<Running> = tx
        .query(&sql, &[&ids])
        .await
        .map_err(pg)?
        .iter()
        .map(running_row)
        .collect();
    let tokens: HashMap<TaskId, i64> = tasks.into_iter().collect();
    let mut result = CompleteResult::default();
    let mut freed = Freed::default();
    let (mut back, mut cancelled, mut closed) = (Vec::new(), Vec::new(), Vec::new());
    for task in &running {
        if tokens.get(&task.id) != Some(&task.lease_token) {
            continue;
        }
        freed.add(task);
        if task.cancel_requested {
            // Its cancellation reached it before it started: it ends as a pending one would.
            cancelled.push(task.id);
            closed.push((task.batch, task.order, 1));
            result.ended.push((task.id, task.batch));
        } else {
            back.push(task.id);
        }
    }
    if !cancelled.is_empty() {
        tx.execute(
            "UPDATE tasks SET state = 5, attempts = attempts - 1, ended_at = $1,
                 outcome = 'cancelled', error = 'cancelled before it ran',
                 lease_node = NULL, lease_token = NULL
             WHERE id = ANY($2)",
            &[&now, &cancelled],
        )
        .await
        .map_err(pg)?;
    }
    tx.execute(
        "WITH back AS (
             UPDATE tasks SET state = 1, attempts = attempts - 1,
                 lease_node = NULL, lease_token = NULL
             WHERE id = ANY($1)
             RETURNING id, batch_id, group_key, priority, vseq, not_before)
         INSERT INTO ready (task_id, batch_id, group_key, priority, vseq, not_before)
         SELECT * FROM back",
        &[&back],
    )
    .await
    .map_err(pg)?;
    back.extend(&cancelled);
    tokio::try_join!(
        drop_leases(tx, &back),
        freed.write(tx),
        gate::close(tx, &closed)
    )?;
    Ok(result)
}
