//! Dependency edges in PostgreSQL (see `store/graph.rs`): what a submission's graph reads,
//! the edges it writes, and their settling when a dependency ends, in the transaction that
//! ends it: dependents are counted down, and made ready at zero if their order is the gate,
//! or ended as their edge's `on_failure` says, which settles their own dependents in turn.
//!
//! Whoever makes a dependent ready reads its batch's gate under the batch's gate lock, as
//! a gate's promotion does, and a promotion passes over tasks with dependencies open: of
//! the two, the later one sees the other's write, so a dependent at the gate whose count
//! reached zero is never left waiting.

use std::collections::{BTreeMap, HashMap};

use deadpool_postgres::GenericClient;

use super::cached::Cached;
use super::{gate, hooks, pg};
use crate::runtime::Outcome;
use crate::store::graph::{self, Graph, Node, Reads, Stored, StoredTasks};
use crate::store::*;

/// The columns of a stored task as [`stored_row`] reads it, from `tasks` as `t`.
const STORED: &str =
    "t.id, t.batch_id, t.ord, t.task_key, t.state, t.outcome, t.claimed_at IS NOT NULL";

fn stored_row(r: &tokio_postgres::Row) -> Stored {
    let state: i32 = r.get(4);
    let outcome: Option<String> = r.get(5);
    Stored {
        id: r.get(0),
        batch: r.get(1),
        order: r.get(2),
        key: r.get(3),
        ended_well: ended_well(state.into(), outcome.as_deref()),
        fan_in: false,
        claimed: r.get(6),
        on_failure: OnFailure::Cancel,
    }
}

/// None while a task of stored `state` has not ended; else whether it ended well:
/// succeeded (3), or skipped.
fn ended_well(state: i64, outcome: Option<&str>) -> Option<bool> {
    (state >= 3).then(|| state == 3 || outcome == Some(Outcome::Skipped.as_str()))
}

/// The fan-ins of batch `$1`, as [`read`] takes them.
pub(super) const FAN_INS_SQL: &str = "SELECT t.id, t.batch_id, t.ord, t.task_key, t.state, \
    t.outcome, t.claimed_at IS NOT NULL, f.on_failure \
    FROM batch_fan_ins f JOIN tasks t ON t.id = f.task_id WHERE f.batch_id = $1";

/// The stored tasks the graph of a submission to `batch` needs, given the rows of
/// [`FAN_INS_SQL`]. The caller holds the batch's gate lock, so that no dependency ends
/// unseen meanwhile.
pub(super) async fn read(
    tx: &impl GenericClient,
    batch: BatchId,
    reads: &Reads,
    fan_ins: &[tokio_postgres::Row],
) -> StoreResult<StoredTasks> {
    let mut stored = StoredTasks::default();
    for r in fan_ins {
        let mut task = stored_row(r);
        task.fan_in = true;
        task.on_failure = OnFailure::from_code(r.get::<_, i32>(7).into());
        stored.fan_ins.push(task);
    }
    if reads.is_empty() {
        return Ok(stored);
    }
    let is_fan_in = |id: TaskId| stored.fan_ins.iter().any(|f| f.id == id);
    let mut by_key = HashMap::new();
    if !reads.keys.is_empty() {
        let rows = tx
            .query(
                &format!(
                    "SELECT {STORED} FROM tasks t WHERE t.batch_id = $1 AND t.task_key = ANY($2)"
                ),
                &[&batch, &reads.keys],
            )
            .await
            .map_err(pg)?;
        for r in rows {
            let mut task = stored_row(&r);
            task.fan_in = is_fan_in(task.id);
            by_key.insert(task.key.clone().unwrap_or_default(), task);
        }
    }
    let mut by_id = HashMap::new();
    if !reads.ids.is_empty() {
        let rows = tx
            .query(
                &format!("SELECT {STORED} FROM tasks t WHERE t.id = ANY($1)"),
                &[&reads.ids],
            )
            .await
            .map_err(pg)?;
        for r in rows {
            let mut task = stored_row(&r);
            task.fan_in = is_fan_in(task.id);
            by_id.insert(task.id, task);
        }
    }
    if reads.all {
        let rows = tx
            .query(
                &format!("SELECT {STORED} FROM tasks t WHERE t.batch_id = $1"),
                &[&batch],
            )
            .await
            .map_err(pg)?;
        for r in rows {
            let mut task = stored_row(&r);
            task.fan_in = is_fan_in(task.id);
            stored.all.push(task);
        }
    }
    stored.by_key = by_key;
    stored.by_id = by_id;
    Ok(stored)
}

/// Writes the edges of a submission whose tasks got `ids`, and settles those whose
/// dependency has already ended. The caller holds the batch's gate lock.
#[allow(clippy::too_many_arguments)]
pub(super) async fn write(
    tx: &impl GenericClient,
    batch: BatchId,
    specs: &[TaskSpec],
    ids: &[TaskId],
    graph: &Graph,
    now: Micros,
    server: bool,
) -> StoreResult<CompleteResult> {
    let id = |node: Node| match node {
        Node::New(index) => ids[index],
        Node::Stored(id) => id,
    };
    let deps: Vec<i64> = graph.edges.iter().map(|e| id(e.dep)).collect();
    let dependents: Vec<i64> = graph.edges.iter().map(|e| id(e.dependent)).collect();
    let policies: Vec<i32> = graph
        .edges
        .iter()
        .map(|e| e.on_failure.code() as i32)
        .collect();
    tx.run(
        "INSERT INTO task_edges (dep_id, task_id, on_failure)
         SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[])",
        &[&deps, &dependents, &policies],
    )
    .await?;
    let mut leading = deps.clone();
    leading.sort_unstable();
    leading.dedup();
    tx.run(
        "UPDATE tasks SET dependents = TRUE WHERE id = ANY($1) AND NOT dependents",
        &[&leading],
    )
    .await?;
    let (fan_ins, fan_in_policies): (Vec<i64>, Vec<i32>) = specs
        .iter()
        .enumerate()
        .filter(|(_, s)| s.fan_in)
        .map(|(index, s)| (ids[index], s.on_failure.code() as i32))
        .unzip();
    if !fan_ins.is_empty() {
        tx.run(
            "INSERT INTO batch_fan_ins (batch_id, task_id, on_failure)
             SELECT $1, * FROM unnest($2::bigint[], $3::int[])",
            &[&batch, &fan_ins, &fan_in_policies],
        )
        .await?;
    }
    // A stored fan-in waits for the new tasks: back to waiting, out of the ready queue.
    for &(fan_in, more) in &graph.reopened {
        tx.run(
            "WITH held AS (
                 UPDATE tasks SET deps_open = deps_open + $1, state = 0
                 WHERE id = $2 AND state IN (0, 1) RETURNING id)
             DELETE FROM ready WHERE task_id IN (SELECT id FROM held)",
            &[&(more as i32), &fan_in],
        )
        .await?;
    }
    // As if the dependencies that had ended ended now, one after another in id order,
    // each with all it ends in turn (the order in which a task after two of them that
    // failed sees them, and so whether it is cancelled or skipped).
    let mut result = CompleteResult::default();
    let mut settled: Vec<(TaskId, TaskId, bool, OnFailure)> = graph
        .settled
        .iter()
        .map(|&(e, well)| (id(e.dep), id(e.dependent), well, e.on_failure))
        .collect();
    settled.sort_by_key(|&(dep, dependent, ..)| (dep, dependent));
    for chunk in settled.chunk_by(|a, b| a.0 == b.0) {
        let next = settle_edges(tx, chunk.to_vec(), now, server, &mut result).await?;
        settle(tx, next, now, server, &mut result).await?;
    }
    Ok(result)
}

/// Settles the edges from tasks that ended, each with whether it ended well. Tasks this
/// ends in turn are of the same batches as those: `result.ended` already names them
/// (their webhooks are told through `result.hooked`).
pub(super) async fn settle(
    tx: &impl GenericClient,
    ended: Vec<(TaskId, bool)>,
    now: Micros,
    server: bool,
    result: &mut CompleteResult,
) -> StoreResult<()> {
    // One dependency at a time, the last one ended first, each dependency's dependents in
    // id order: the order the model (`scheduler/model/graph.rs`) and SQLite settle in.
    let mut work = ended;
    let stmt = tx
        .prepare_cached(
            "SELECT task_id, on_failure FROM task_edges WHERE dep_id = $1 ORDER BY task_id",
        )
        .await
        .map_err(pg)?;
    while let Some((dep, well)) = work.pop() {
        let edges: Vec<(TaskId, TaskId, bool, OnFailure)> = tx
            .query(&stmt, &[&dep])
            .await
            .map_err(pg)?
            .iter()
            .map(|r| {
                let policy = OnFailure::from_code(r.get::<_, i32>(1).into());
                (dep, r.get(0), well, policy)
            })
            .collect();
        work.extend(settle_edges(tx, edges, now, server, result).await?);
    }
    Ok(())
}

/// Settles edges (dependency, dependent, whether the dependency ended well, policy):
/// counts dependents down, makes those at zero at their gate ready, and ends those their
/// policy ends; returns these, each with whether it was skipped, for their own edges.
async fn settle_edges(
    tx: &impl GenericClient,
    edges: Vec<(TaskId, TaskId, bool, OnFailure)>,
    now: Micros,
    server: bool,
    result: &mut CompleteResult,
) -> StoreResult<Vec<(TaskId, bool)>> {
    if edges.is_empty() {
        return Ok(Vec::new());
    }
    let mut down: BTreeMap<TaskId, i32> = BTreeMap::new();
    let mut doomed: Vec<(TaskId, TaskId, bool)> = Vec::new();
    for (dep, task, well, policy) in edges {
        if well || policy == OnFailure::Run {
            *down.entry(task).or_default() += 1;
        } else {
            doomed.push((task, dep, policy == OnFailure::Skip));
        }
    }
    // The gates of the dependents' batches, locked in one order before they are read.
    let tasks: Vec<i64> = down
        .keys()
        .copied()
        .chain(doomed.iter().map(|d| d.0))
        .collect();
    let mut batches: Vec<i64> = tx
        .rows(
            "SELECT DISTINCT batch_id FROM tasks WHERE id = ANY($1)",
            &[&tasks],
        )
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    batches.sort_unstable();
    for &batch in &batches {
        gate::lock(tx, batch).await?;
    }
    if !down.is_empty() {
        let (ids, counts): (Vec<i64>, Vec<i32>) = down.into_iter().unzip();
        tx.run(include_str!("sql/graph_count_down.sql"), &[&ids, &counts])
            .await?;
    }
    let mut next: Vec<(TaskId, bool)> = Vec::new();
    let mut closed = Vec::new();
    for (task, dep, skip) in doomed {
        let outcome = if skip {
            Outcome::Skipped
        } else {
            Outcome::Cancelled
        };
        let row = tx
            .row_opt(
                "UPDATE tasks SET state = 5, ended_at = $1, outcome = $2, error = $3,
                     deps_open = 0
                 WHERE id = $4 AND state = 0 RETURNING batch_id, ord",
                &[&now, &outcome.as_str(), &graph::ended_by(dep, skip), &task],
            )
            .await?;
        if let Some(row) = row {
            let batch: i64 = row.get(0);
            closed.push((batch, row.get::<_, i64>(1), 1));
            next.push((task, skip));
        }
    }
    let ended = gate::close(tx, &closed).await?;
    result.hooked |= hooks::batch_ends(tx, &ended, server, now).await?;
    Ok(next)
}

/// Counts the dependencies of tasks run again (`redriven`) anew, and makes the tasks not
/// started after them wait for them again. The caller holds their batches' gate locks.
pub(super) async fn redrive(tx: &impl GenericClient, redriven: &[TaskId]) -> StoreResult<()> {
    tx.run(include_str!("sql/graph_redrive.sql"), &[&redriven])
        .await?;
    Ok(())
}

/// Deletes the edges and fan-ins of pruned tasks.
pub(super) async fn prune(tx: &impl GenericClient, ids: &[TaskId]) -> StoreResult<()> {
    for sql in [
        "DELETE FROM task_edges WHERE task_id = ANY($1)",
        "DELETE FROM task_edges WHERE dep_id = ANY($1)",
        "DELETE FROM batch_fan_ins WHERE task_id = ANY($1)",
    ] {
        tx.execute(sql, &[&ids]).await.map_err(pg)?;
    }
    Ok(())
}

/// What a task's attempt reads of its dependencies: each with how it ended and its output,
/// in the order of their ids; refused past [`graph::MAX_INPUTS`] bytes of outputs.
pub(super) async fn inputs(store: &super::PostgresStore, task: TaskId) -> StoreResult<Vec<Input>> {
    let client = store.client(super::Commit::Durable).await?;
    let sizes = client
        .row(
            "SELECT COUNT(*), COALESCE(SUM(length(t.output)), 0)::bigint
             FROM task_edges e JOIN tasks t ON t.id = e.dep_id WHERE e.task_id = $1",
            &[&task],
        )
        .await?;
    let (count, total): (i64, i64) = (sizes.get(0), sizes.get(1));
    graph::check_inputs(task, count as usize, total)?;
    let rows = client
        .rows(
            "SELECT t.id, t.task_key, t.state, t.outcome, t.error, t.output
             FROM task_edges e JOIN tasks t ON t.id = e.dep_id
             WHERE e.task_id = $1 ORDER BY t.id",
            &[&task],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Input {
            task: r.get(0),
            key: r.get(1),
            state: TaskState::from_code(r.get::<_, i32>(2).into()).unwrap_or(TaskState::Failed),
            outcome: r.get::<_, Option<String>>(3).and_then(|o| o.parse().ok()),
            error: r.get(4),
            output: r.get::<_, Option<Vec<u8>>>(5).unwrap_or_default(),
        })
        .collect())
}

/// The edges of `batch`'s tasks, (dependency, dependent), at most `limit`.
pub(super) async fn edges(
    store: &super::PostgresStore,
    batch: BatchId,
    limit: usize,
) -> StoreResult<Vec<(TaskId, TaskId)>> {
    let client = store.client(super::Commit::Durable).await?;
    let rows = client
        .rows(
            "SELECT e.dep_id, e.task_id FROM tasks t JOIN task_edges e ON e.task_id = t.id
             WHERE t.batch_id = $1 ORDER BY e.task_id, e.dep_id LIMIT $2",
            &[&batch, &(limit as i64)],
        )
        .await?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}
