//! Dependency edges in SQLite (see `store/graph.rs`): what a submission's graph reads,
//! the edges it writes, and their settling when a dependency ends, in the transaction that
//! ends it: a dependent is counted down, and made ready at zero if its order is the gate,
//! or ended as its edge's `on_failure` says, which settles its own dependents in turn.

use std::collections::{BTreeMap, HashMap};

use rusqlite::{OptionalExtension, Transaction, params};

use super::{gate, hooks, internal};
use crate::runtime::Outcome;
use crate::store::graph::{self, Graph, Node, Reads, Stored, StoredTasks};
use crate::store::*;

// The statements that change tasks are `OR FAIL`: no statement journal (see mod.rs).

/// The dependents of a dependency.
pub(super) const DEPENDENTS_SQL: &str = "SELECT task_id FROM task_edges WHERE dep_id = ?";
/// A waiting dependent counted down by ?2 of its edges.
pub(super) const COUNT_DOWN_SQL: &str = "UPDATE OR FAIL tasks SET deps_open = max(deps_open - ?2, 0) \
    WHERE id = ?1 AND state = 0 AND deps_open > 0 RETURNING deps_open, batch_id, ord";
/// A waiting dependent whose dependencies have all ended, made ready.
pub(super) const READY_SQL: &str =
    "UPDATE OR FAIL tasks SET state = 1, listed = 1 WHERE id = ? AND state = 0";
/// The dependents of dependency ?1 that its end lets go on (all when it ended well, ?2,
/// else those whose edge says `run`), counted down in one statement whatever their number.
/// Looked up by id (`NOT INDEXED`): an index on the state would walk every waiting task.
pub(super) const COUNT_DOWN_ALL_SQL: &str = "UPDATE OR FAIL tasks NOT INDEXED SET deps_open = deps_open - 1 \
    WHERE id IN (SELECT task_id FROM task_edges WHERE dep_id = ?1 AND (?2 OR on_failure = 1)) \
    AND state = 0 AND deps_open > 0 RETURNING deps_open = 0";
/// Those of them at zero made ready when their order ?3 is the gate.
pub(super) const READY_ALL_SQL: &str = "UPDATE OR FAIL tasks NOT INDEXED SET state = 1, listed = 1 WHERE id IN \
    (SELECT task_id FROM task_edges WHERE dep_id = ?1 AND (?2 OR on_failure = 1)) \
    AND state = 0 AND deps_open = 0 AND ord = ?3";

/// The columns of a stored task as [`stored_row`] reads it, from `tasks` as `t`.
const STORED: &str = "t.id, t.batch_id, t.ord, t.task_key, t.state, t.outcome, \
    t.claimed_at IS NOT NULL";

fn stored_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Stored> {
    let state: i64 = r.get(4)?;
    let outcome: Option<String> = r.get(5)?;
    Ok(Stored {
        id: r.get(0)?,
        batch: r.get(1)?,
        order: r.get(2)?,
        key: r.get(3)?,
        ended_well: ended_well(state, outcome.as_deref()),
        fan_in: false,
        claimed: r.get(6)?,
        on_failure: OnFailure::Cancel,
    })
}

/// None while a task of stored `state` has not ended; else whether it ended well:
/// succeeded (3), or skipped.
pub(super) fn ended_well(state: i64, outcome: Option<&str>) -> Option<bool> {
    (state >= 3).then(|| state == 3 || outcome == Some(Outcome::Skipped.as_str()))
}

/// The stored tasks the graph of a submission to `batch` needs.
pub(super) fn read(
    tx: &Transaction<'_>,
    batch: BatchId,
    reads: &Reads,
) -> StoreResult<StoredTasks> {
    let mut stored = StoredTasks::default();
    {
        let mut stmt = tx
            .prepare_cached(&format!(
                "SELECT {STORED}, f.on_failure FROM batch_fan_ins f JOIN tasks t ON t.id = f.task_id \
                 WHERE f.batch_id = ?"
            ))
            .map_err(internal)?;
        let rows = stmt
            .query_map([batch], |r| {
                let mut task = stored_row(r)?;
                task.fan_in = true;
                task.on_failure = OnFailure::from_code(r.get(7)?);
                Ok(task)
            })
            .map_err(internal)?;
        stored.fan_ins = rows.collect::<Result<_, _>>().map_err(internal)?;
    }
    if reads.is_empty() {
        return Ok(stored);
    }
    let fan_in = |id: TaskId| stored.fan_ins.iter().any(|f| f.id == id);
    let mut by_key = HashMap::new();
    {
        let mut stmt = tx
            .prepare_cached(&format!(
                "SELECT {STORED} FROM tasks t WHERE t.batch_id = ? AND t.task_key = ?"
            ))
            .map_err(internal)?;
        for key in &reads.keys {
            if let Some(mut task) = stmt
                .query_row(params![batch, key], stored_row)
                .optional()
                .map_err(internal)?
            {
                task.fan_in = fan_in(task.id);
                by_key.insert(key.clone(), task);
            }
        }
    }
    let mut by_id = HashMap::new();
    {
        let mut stmt = tx
            .prepare_cached(&format!("SELECT {STORED} FROM tasks t WHERE t.id = ?"))
            .map_err(internal)?;
        for &id in &reads.ids {
            if let Some(mut task) = stmt
                .query_row([id], stored_row)
                .optional()
                .map_err(internal)?
            {
                task.fan_in = fan_in(task.id);
                by_id.insert(id, task);
            }
        }
    }
    if reads.all {
        let mut stmt = tx
            .prepare_cached(&format!(
                "SELECT {STORED} FROM tasks t INDEXED BY tasks_batch WHERE t.batch_id = ?"
            ))
            .map_err(internal)?;
        let rows = stmt.query_map([batch], stored_row).map_err(internal)?;
        for task in rows {
            let mut task = task.map_err(internal)?;
            task.fan_in = fan_in(task.id);
            stored.all.push(task);
        }
    }
    stored.by_key = by_key;
    stored.by_id = by_id;
    Ok(stored)
}

/// Writes the edges of a submission whose tasks got `ids`, and settles those whose
/// dependency has already ended.
pub(super) fn write(
    tx: &Transaction<'_>,
    batch: BatchId,
    specs: &[TaskSpec],
    ids: &[TaskId],
    graph: &Graph,
    now: Micros,
    server: bool,
) -> StoreResult<()> {
    let id = |node: Node| match node {
        Node::New(index) => ids[index],
        Node::Stored(id) => id,
    };
    {
        let mut edge = tx
            .prepare_cached("INSERT INTO task_edges (dep_id, task_id, on_failure) VALUES (?, ?, ?)")
            .map_err(internal)?;
        let mut leads = tx
            .prepare_cached("UPDATE tasks SET dependents = 1 WHERE id = ? AND dependents = 0")
            .map_err(internal)?;
        for e in &graph.edges {
            edge.execute(params![id(e.dep), id(e.dependent), e.on_failure.code()])
                .map_err(internal)?;
            leads.execute([id(e.dep)]).map_err(internal)?;
        }
        let mut fan_in = tx
            .prepare_cached(
                "INSERT INTO batch_fan_ins (batch_id, task_id, on_failure) VALUES (?, ?, ?)",
            )
            .map_err(internal)?;
        for (index, spec) in specs.iter().enumerate().filter(|(_, s)| s.fan_in) {
            fan_in
                .execute(params![batch, ids[index], spec.on_failure.code()])
                .map_err(internal)?;
        }
        // A stored fan-in waits for the new tasks: back to waiting if it was ready.
        let mut reopen = tx
            .prepare_cached(
                "UPDATE tasks SET deps_open = deps_open + ?, state = 0, listed = 0 \
                 WHERE id = ? AND state IN (0, 1)",
            )
            .map_err(internal)?;
        for &(fan_in, more) in &graph.reopened {
            reopen.execute(params![more, fan_in]).map_err(internal)?;
        }
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
        let mut ended = Vec::new();
        for &(dep, dependent, well, on_failure) in chunk {
            let settled = settle_edge(
                tx,
                dep,
                dependent,
                well,
                on_failure,
                now,
                server,
                &mut result,
            )?;
            if let Some(skipped) = settled {
                ended.push((dependent, skipped));
            }
        }
        settle(tx, ended, now, server, &mut result)?;
    }
    Ok(())
}

/// Settles the edges from tasks that ended, each with whether it ended well, as a stack:
/// the last first, with all it ends in turn (pushed, in id order) before the rest. Tasks
/// this ends in turn are of the same batches as those: `result.ended` already names them
/// (their webhooks are told through `result.hooked`).
pub(super) fn settle(
    tx: &Transaction<'_>,
    ended: Vec<(TaskId, bool)>,
    now: Micros,
    server: bool,
    result: &mut CompleteResult,
) -> StoreResult<()> {
    let mut work = ended;
    while let Some((dep, well)) = work.pop() {
        count_down(tx, dep, well)?;
        if well {
            continue;
        }
        // The dependents its failure ends (those whose edge does not say `run`), in id
        // order, each with what it ends in turn, the last first: as the model does.
        let doomed: Vec<(TaskId, i64)> = {
            let mut stmt = tx
                .prepare_cached(
                    "SELECT task_id, on_failure FROM task_edges \
                     WHERE dep_id = ? AND on_failure <> 1 ORDER BY task_id",
                )
                .map_err(internal)?;
            let rows = stmt
                .query_map([dep], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(internal)?;
            rows.collect::<Result<_, _>>().map_err(internal)?
        };
        for (task, on_failure) in doomed {
            let on_failure = OnFailure::from_code(on_failure);
            if let Some(skipped) =
                settle_edge(tx, dep, task, false, on_failure, now, server, result)?
            {
                work.push((task, skipped));
            }
        }
    }
    Ok(())
}

/// Settles the edges from tasks that all ended well (`deps`, of one batch or more): their
/// dependents are counted down, each once per edge from them, and made ready at zero when
/// their order is the gate. Count-downs end nothing, so their order does not matter, and a
/// dependent of many of them (a join) is written once rather than once per edge.
pub(super) fn settle_well(tx: &Transaction<'_>, deps: &[TaskId]) -> StoreResult<()> {
    if let [dep] = deps {
        return count_down(tx, *dep, true);
    }
    let mut by_dependent: BTreeMap<TaskId, i64> = BTreeMap::new();
    {
        let mut edges = tx.prepare_cached(DEPENDENTS_SQL).map_err(internal)?;
        for &dep in deps {
            let rows = edges
                .query_map([dep], |r| r.get::<_, TaskId>(0))
                .map_err(internal)?;
            for task in rows {
                *by_dependent.entry(task.map_err(internal)?).or_default() += 1;
            }
        }
    }
    let mut down = tx.prepare_cached(COUNT_DOWN_SQL).map_err(internal)?;
    let mut gates: HashMap<BatchId, Option<i64>> = HashMap::new();
    for (task, edges) in by_dependent {
        let left: Option<(i64, BatchId, i64)> = down
            .query_row(params![task, edges], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()
            .map_err(internal)?;
        let Some((0, batch, order)) = left else {
            continue;
        };
        let gate = match gates.get(&batch) {
            Some(&gate) => gate,
            None => {
                let gate = gate::current(tx, batch)?;
                gates.insert(batch, gate);
                gate
            }
        };
        if gate == Some(order) {
            make_ready(tx, task)?;
        }
    }
    Ok(())
}

/// Makes a waiting task whose dependencies have all ended ready.
fn make_ready(tx: &Transaction<'_>, task: TaskId) -> StoreResult<()> {
    tx.prepare_cached(READY_SQL)
        .map_err(internal)?
        .execute([task])
        .map_err(internal)?;
    Ok(())
}

/// Counts down, in one statement whatever their number, the dependents of `dep` that
/// its end lets go on (all when it ended `well`, else those whose edge says `run`), and
/// makes those at zero ready (a second) when their order is the gate of their batch (the batch of
/// `dep`: edges stay within one).
fn count_down(tx: &Transaction<'_>, dep: TaskId, well: bool) -> StoreResult<()> {
    // Whether one reached zero: only then is the gate read.
    let zero = {
        let mut stmt = tx.prepare_cached(COUNT_DOWN_ALL_SQL).map_err(internal)?;
        let rows = stmt
            .query_map(params![dep, well], |r| r.get::<_, bool>(0))
            .map_err(internal)?;
        let mut zero = false;
        for row in rows {
            zero |= row.map_err(internal)?;
        }
        zero
    };
    if !zero {
        return Ok(());
    }
    let batch: BatchId = tx
        .prepare_cached("SELECT batch_id FROM tasks WHERE id = ?")
        .map_err(internal)?
        .query_row([dep], |r| r.get(0))
        .map_err(internal)?;
    let Some(gate) = gate::current(tx, batch)? else {
        return Ok(());
    };
    tx.prepare_cached(READY_ALL_SQL)
        .map_err(internal)?
        .execute(params![dep, well, gate])
        .map_err(internal)?;
    Ok(())
}

/// Settles one edge whose dependency `dep` ended (`well` or not): counts `task` down, or
/// ends it. When it ends it, returns whether it was skipped, for its own dependents.
#[allow(clippy::too_many_arguments)]
fn settle_edge(
    tx: &Transaction<'_>,
    dep: TaskId,
    task: TaskId,
    well: bool,
    on_failure: OnFailure,
    now: Micros,
    server: bool,
    result: &mut CompleteResult,
) -> StoreResult<Option<bool>> {
    if well || on_failure == OnFailure::Run {
        let left: Option<(i64, BatchId, i64)> = tx
            .prepare_cached(COUNT_DOWN_SQL)
            .map_err(internal)?
            .query_row(params![task, 1], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()
            .map_err(internal)?;
        if let Some((0, batch, order)) = left
            && gate::current(tx, batch)? == Some(order)
        {
            make_ready(tx, task)?;
        }
        return Ok(None);
    }
    let skip = on_failure == OnFailure::Skip;
    let outcome = if skip {
        Outcome::Skipped
    } else {
        Outcome::Cancelled
    };
    let ended: Option<(BatchId, i64)> = tx
        .prepare_cached(
            "UPDATE tasks SET state = 5, listed = 5, ended_at = ?, outcome = ?, error = ?, \
             deps_open = 0 WHERE id = ? AND state = 0 RETURNING batch_id, ord",
        )
        .map_err(internal)?
        .query_row(
            params![now, outcome.as_str(), graph::ended_by(dep, skip), task],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(internal)?;
    let Some((batch, order)) = ended else {
        return Ok(None);
    };
    if gate::close(tx, batch, order)? {
        result.hooked |= hooks::batch_ended(tx, batch, server, now)?;
    }
    Ok(Some(skip))
}

/// Counts the dependencies of tasks run again (`redriven`) anew, and makes the tasks not
/// started after them wait for them again, their own dependencies counted anew too: a
/// parent handed back before it suspended had its open children's edges uncounted.
pub(super) fn redrive(tx: &Transaction<'_>, redriven: &[TaskId]) -> StoreResult<()> {
    let mut again = tx
        .prepare_cached(
            "UPDATE tasks SET deps_open = (SELECT COUNT(*) FROM task_edges e \
                 JOIN tasks d ON d.id = e.dep_id WHERE e.task_id = tasks.id AND d.state < 3), \
             state = 0, listed = 0 \
             WHERE id IN (SELECT task_id FROM task_edges WHERE dep_id = ?) AND state IN (0, 1)",
        )
        .map_err(internal)?;
    let mut recount = tx
        .prepare_cached(
            "UPDATE tasks SET deps_open = (SELECT COUNT(*) FROM task_edges e \
                 JOIN tasks d ON d.id = e.dep_id WHERE e.task_id = tasks.id AND d.state < 3) \
             WHERE id = ? RETURNING deps_open, state",
        )
        .map_err(internal)?;
    let mut wait = tx
        .prepare_cached("UPDATE tasks SET state = 0, listed = 0 WHERE id = ? AND state = 1")
        .map_err(internal)?;
    for &task in redriven {
        again.execute([task]).map_err(internal)?;
    }
    for &task in redriven {
        let (open, state): (i64, i64) = recount
            .query_row([task], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(internal)?;
        if open > 0 && state == 1 {
            wait.execute([task]).map_err(internal)?;
        }
    }
    Ok(())
}

/// What a task's attempt reads of its dependencies: each with how it ended and its output,
/// in the order of their ids; refused past [`graph::MAX_INPUTS`] bytes of outputs.
pub(super) fn inputs(conn: &rusqlite::Connection, task: TaskId) -> StoreResult<Vec<Input>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT t.id, t.task_key, t.state, t.outcome, t.error, length(t.output) \
             FROM task_edges e JOIN tasks t ON t.id = e.dep_id \
             WHERE e.task_id = ? ORDER BY t.id",
        )
        .map_err(internal)?;
    let rows = stmt
        .query_map([task], |r| {
            Ok((
                r.get::<_, TaskId>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<i64>>(5)?,
            ))
        })
        .map_err(internal)?;
    let deps: Vec<_> = rows.collect::<Result<_, _>>().map_err(internal)?;
    let total: i64 = deps.iter().filter_map(|d| d.5).sum();
    graph::check_inputs(task, deps.len(), total)?;
    let mut output = conn
        .prepare_cached("SELECT output FROM tasks WHERE id = ?")
        .map_err(internal)?;
    let mut inputs = Vec::with_capacity(deps.len());
    for (id, key, state, outcome, error, size) in deps {
        let bytes: Option<Vec<u8>> = if size.is_some() {
            output.query_row([id], |r| r.get(0)).map_err(internal)?
        } else {
            None
        };
        inputs.push(Input {
            task: id,
            key,
            state: TaskState::from_code(state).unwrap_or(TaskState::Failed),
            outcome: outcome.and_then(|o| o.parse().ok()),
            output: bytes.unwrap_or_default(),
            error,
        });
    }
    Ok(inputs)
}

/// The edges of `batch`'s tasks, (dependency, dependent), at most `limit`.
pub(super) fn edges(
    conn: &rusqlite::Connection,
    batch: BatchId,
    limit: usize,
) -> StoreResult<Vec<(TaskId, TaskId)>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT e.dep_id, e.task_id FROM tasks t INDEXED BY tasks_batch \
             JOIN task_edges e ON e.task_id = t.id \
             WHERE t.batch_id = ? ORDER BY e.task_id, e.dep_id LIMIT ?",
        )
        .map_err(internal)?;
    let rows = stmt
        .query_map(params![batch, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(internal)?;
    rows.collect::<Result<_, _>>().map_err(internal)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rusqlite::StatementStatus;

    use super::*;
    use crate::runtime::RuntimeConfig;
    use crate::scheduler::admit::admit;
    use crate::store::sqlite::SqliteStore;

    /// How many times each statement ran since the last call, in `sqls`' order.
    fn runs(store: &SqliteStore, sqls: &[&str]) -> Vec<i32> {
        let conn = store.conn.lock().unwrap();
        sqls.iter()
            .map(|sql| {
                let stmt = conn.conn.prepare_cached(sql).unwrap();
                let runs = stmt.get_status(StatementStatus::Run);
                stmt.reset_status(StatementStatus::Run);
                runs
            })
            .collect()
    }

    fn success(task: &ClaimedTask) -> Completion {
        Completion {
            defer: None,
            task: task.id,
            batch: task.batch,
            lease_token: task.lease_token,
            node: "n1".into(),
            slot: Some(0),
            started_at: 2,
            ended_at: 3,
            cpu_micros: None,
            memory_mib_seconds: None,
            http_bytes: None,
            outcome: Outcome::Succeeded,
            error: None,
            output: None,
            logs: Vec::new(),
            stdout: Vec::new(),
            stderr: Vec::new(),
        }
    }

    /// A join after 20 tasks, 19 of which succeed in one write: the join is counted down
    /// by 19 in one statement, not once per edge, and made ready by the last one alone.
    #[tokio::test]
    async fn a_wave_of_ends_counts_their_join_down_in_one_statement() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("q.db")).unwrap();
        let module = store.module_put(b"not run".to_vec(), None, None, 0);
        let module = module.await.unwrap().digest;
        let batch = store.batch_open(BatchSpec::default(), [7; 32], 0);
        let batch = batch.await.unwrap().id;
        let mut specs: Vec<TaskSpec> = (0..20)
            .map(|i| TaskSpec {
                key: Some(format!("s{i}")),
                ..TaskSpec::new(module, "x")
            })
            .collect();
        specs.push(TaskSpec {
            key: Some("j".into()),
            after: (0..20).map(|i| Dep::key(format!("s{i}"))).collect(),
            ..TaskSpec::new(module, "x")
        });
        let specs = admit(&RuntimeConfig::with_workers(1), specs).unwrap();
        let ids = store.task_submit(batch, specs, 1).await.unwrap();
        let join = ids[20];
        let claim = ClaimParams {
            node: "n1".into(),
            max: 100,
            now: 2,
            lease: Duration::from_secs(60),
        };
        let mut claimed = store.task_claim(claim.clone()).await.unwrap().tasks;
        assert_eq!(claimed.len(), 20, "the join waits for the others");
        let last = claimed.pop().unwrap();
        let counted = [COUNT_DOWN_SQL, COUNT_DOWN_ALL_SQL];
        runs(&store, &counted);

        let wave = claimed.iter().map(success).collect();
        store.task_complete(wave, 3).await.unwrap();
        assert_eq!(
            runs(&store, &counted),
            [1, 0],
            "19 ends count their join down in one statement"
        );
        let waiting = store.task_get(join).await.unwrap();
        assert_eq!(waiting.state, TaskState::Waiting, "one dependency is open");

        store.task_complete(vec![success(&last)], 4).await.unwrap();
        assert_eq!(store.task_get(join).await.unwrap().state, TaskState::Ready);
        let next = store.task_claim(claim).await.unwrap().tasks;
        assert_eq!(next.iter().map(|t| t.id).collect::<Vec<_>>(), [join]);
    }
}
