//! The execution log and what nodes and people read: attempt records, the running view,
//! and pruning what ended long ago.

use deadpool_postgres::GenericClient;

use super::cached::Cached;
use super::complete::Running;
use super::{Commit, PostgresStore, digest_of, pg};
use crate::runtime::Outcome;
use crate::store::*;

/// A value a page's statement binds.
type Param = Box<dyn tokio_postgres::types::ToSql + Sync + Send>;

/// The statement that reads a page of the log with `filter`, and what it binds; with a
/// time range, its positions are read `by_time` (see [`by_time`]) or along the primary
/// key. Each filter given adds its own clause, so that the plan can use the index of the
/// log for it (`attempts_task`, `attempts_batch`, `attempts_group`, `attempts_outcome`,
/// `attempts_started`) whatever the values: a generic plan of `$1 IS NULL OR ...` clauses
/// would scan the whole log.
fn attempt_page(filter: &AttemptFilter, by_time: bool) -> (String, Vec<Param>) {
    let mut sql = String::from(include_str!("sql/attempt_list.sql").trim_end());
    let mut args: Vec<Param> = Vec::new();
    let mut add = |clause: &str, value: Param| {
        args.push(value);
        sql.push_str(&clause.replace('?', &format!("${}", args.len())));
    };
    if let Some(batch) = filter.batch {
        add(" AND a.batch_id = ?", Box::new(batch));
    }
    if let Some(task) = filter.task {
        add(" AND a.task_id = ?", Box::new(task));
    }
    if let Some(group) = filter.group.clone() {
        add(" AND a.group_key = ?", Box::new(group));
    }
    if let Some(outcome) = filter.outcome {
        add(" AND a.outcome = ?", Box::new(outcome.as_str()));
    }
    if let Some(since) = filter.since {
        add(" AND a.started_at >= ?", Box::new(since));
    }
    if let Some(until) = filter.until {
        add(" AND a.started_at < ?", Box::new(until));
    }
    if let Some(after) = filter.after {
        add(" AND a.id > ?", Box::new(after));
    }
    if let Some(before) = filter.before {
        add(" AND a.id < ?", Box::new(before));
    }
    let limit = filter.limit.unwrap_or(1000).min(10_000) as i64;
    args.push(Box::new(limit));
    let order = if filter.newest_first { "DESC" } else { "ASC" };
    if filter.since.is_some() || filter.until.is_some() {
        // The page's positions from an index alone, then their records: from the index of
        // start times (`+ 0`: not in the order of the primary key, which the planner
        // would walk), or along the primary key, which carries each start time.
        let position = if by_time { "a.id + 0" } else { "a.id" };
        let base = include_str!("sql/attempt_list.sql").trim_end();
        let clauses = &sql[base.len()..];
        sql = format!(
            "{base} AND a.id IN (SELECT a.id FROM attempts a WHERE TRUE{clauses} \
             ORDER BY {position} {order} LIMIT ${}) ORDER BY a.id {order}",
            args.len()
        );
    } else {
        sql.push_str(&format!(" ORDER BY a.id {order} LIMIT ${}", args.len()));
    }
    (sql, args)
}

/// Whether a page with `filter` reads its positions from the index of start times (the
/// attempts in its range, sorted), rather than along the primary key from the page's end
/// (passing over the attempts on that side of the range, from the key alone). The shared
/// rule ([`AttemptFilter::reads_by_time`]) decides, but for a long range: the key walk
/// costs half as much per attempt (measured at a million), so the key is walked unless
/// it passes over more than twice as many attempts as the range holds, by the planner's
/// estimates (counting them would cost as much as either walk).
async fn by_time(client: &deadpool_postgres::Client, filter: &AttemptFilter) -> StoreResult<bool> {
    let timed = filter.since.is_some() || filter.until.is_some();
    if !timed || filter.task.is_some() || filter.batch.is_some() {
        return Ok(false);
    }
    let (since, until) = filter.time_range();
    let in_range: i64 = client
        .row(
            include_str!("sql/attempt_range_count.sql"),
            &[&since, &until, &(AttemptFilter::LONG_RANGE + 1)],
        )
        .await?
        .get(0);
    let shared = filter.reads_by_time(in_range);
    if !shared || in_range <= AttemptFilter::LONG_RANGE {
        return Ok(shared);
    }
    let passed = match filter.newest_first {
        true => filter.until.map(|until| (until, Micros::MAX)),
        false => filter.since.map(|since| (Micros::MIN, since)),
    };
    let Some((from, to)) = passed else {
        // The walk meets the range at once.
        return Ok(false);
    };
    Ok(estimate(client, from, to).await? > 2 * estimate(client, since, until).await?)
}

/// The planner's estimate of the attempts started in `[from, to)`.
async fn estimate(
    client: &deadpool_postgres::Client,
    from: Micros,
    to: Micros,
) -> StoreResult<i64> {
    let sql = include_str!("sql/attempt_range_estimate.sql")
        .replace("$1", &from.to_string())
        .replace("$2", &to.to_string());
    let answer = client.simple_query(&sql).await.map_err(pg)?;
    let plan = answer.iter().find_map(|message| match message {
        tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0),
        _ => None,
    });
    let plan: serde_json::Value = plan
        .and_then(|plan| serde_json::from_str(plan).ok())
        .ok_or_else(|| StoreError::Internal(anyhow::anyhow!("no plan for {sql}")))?;
    Ok(plan[0]["Plan"]["Plan Rows"].as_f64().unwrap_or(0.0) as i64)
}

/// The statement a page of the log with `filter` reads with on `store`, for the tests of
/// its plan.
pub async fn attempt_page_sql(
    store: &PostgresStore,
    filter: &AttemptFilter,
) -> StoreResult<String> {
    let client = store.client(Commit::Durable).await?;
    Ok(attempt_page(filter, by_time(&client, filter).await?).0)
}

/// Attempt records in the order they were written (or newest first), filtered (see
/// [`attempt_page`]).
pub(super) async fn attempt_list(
    store: &PostgresStore,
    filter: AttemptFilter,
) -> StoreResult<Vec<(i64, AttemptRecord)>> {
    let client = store.client(Commit::Durable).await?;
    let (sql, args) = attempt_page(&filter, by_time(&client, &filter).await?);
    let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
        args.iter().map(|a| a.as_ref() as _).collect();
    let rows = client.query(&sql, &params).await.map_err(pg)?;
    Ok(rows
        .iter()
        .map(|r| {
            let logs: Option<String> = r.get(12);
            let record = AttemptRecord {
                task: r.get(1),
                batch: r.get(2),
                module: digest_of(r.get(15)),
                module_name: r.get(16),
                attempt: r.get::<_, i32>(3) as u32,
                node: r.get(4),
                slot: r.get::<_, Option<i32>>(5).map(|s| s as usize),
                group: r.get(6),
                order: r.get(7),
                started_at: r.get(8),
                ended_at: r.get(9),
                cpu_micros: r.get(17),
                memory_mib_seconds: r.get(18),
                http_bytes: r.get::<_, Option<i64>>(19).map(|b| b as u64),
                outcome: r
                    .get::<_, String>(10)
                    .parse()
                    .unwrap_or(Outcome::GuestError),
                error: r.get(11),
                logs: logs
                    .and_then(|l| serde_json::from_str(&l).ok())
                    .unwrap_or_default(),
                stdout: r.get::<_, Option<Vec<u8>>>(13).unwrap_or_default(),
                stderr: r.get::<_, Option<Vec<u8>>>(14).unwrap_or_default(),
                cut: Vec::new(),
            };
            (r.get(0), record)
        })
        .collect())
}

/// What the batch's ended attempts have used.
pub(super) async fn batch_usage(store: &PostgresStore, batch: BatchId) -> StoreResult<BatchUsage> {
    let client = store.client(Commit::Durable).await?;
    let r = client
        .row(include_str!("sql/batch_usage.sql"), &[&batch])
        .await?;
    Ok(BatchUsage {
        batch,
        attempts: r.get::<_, i64>(0) as u64,
        slot_micros: r.get::<_, i64>(1) as u64,
        cpu_micros: r.get::<_, i64>(2) as u64,
        memory_mib_seconds: r.get(3),
        http_bytes: r.get::<_, i64>(4) as u64,
    })
}

pub(super) async fn running_list(store: &PostgresStore) -> StoreResult<Vec<RunningTask>> {
    let client = store.client(Commit::Durable).await?;
    let rows = client
        .rows(include_str!("sql/running_list.sql"), &[])
        .await?;
    Ok(rows
        .iter()
        .map(|r| RunningTask {
            task: r.get(0),
            batch: r.get(1),
            node: r.get(2),
            slot: None,
            attempt: r.get::<_, i32>(3) as u32,
            group: r.get(4),
            order: r.get(5),
            since: r.get(6),
            lease_expires: r.get(7),
        })
        .collect())
}

/// Deletes up to `chunk` tasks that ended before `before`, with their attempt records, and
/// up to `chunk` idempotency keys kept before it whose batch has nothing open.
pub(super) async fn prune(
    store: &PostgresStore,
    before: Micros,
    chunk: usize,
) -> StoreResult<usize> {
    let before = store.db_time(before);
    let chunk = chunk as i64;
    transaction!(store, Commit::Durable, |tx| {
        let ids: Vec<i64> = tx
            .rows(include_str!("sql/prune_pick.sql"), &[&before, &chunk])
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect();
        super::quotas::prune(tx, &ids).await?;
        tx.run("DELETE FROM attempts WHERE task_id = ANY($1)", &[&ids])
            .await?;
        super::graph::prune(tx, &ids).await?;
        let deleted = tx
            .run("DELETE FROM tasks WHERE id = ANY($1)", &[&ids])
            .await?;
        let keys = super::keys::prune(tx, before, chunk).await?;
        Ok(deleted as usize + keys)
    })
}

/// Attempt records, written in one statement.
#[derive(Default)]
pub(super) struct AttemptRows<'a> {
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
    cpu: Vec<Option<i64>>,
    memory: Vec<Option<f64>>,
    http: Vec<Option<i64>>,
    /// Rows whose error may repeat their task's previous attempt's, written one by one
    /// (`sql/attempt_insert_repeat.sql`), with what their batch gets back if it does.
    may_repeat: Vec<(usize, i64)>,
}

impl<'a> AttemptRows<'a> {
    /// The tasks whose attempts these are.
    pub(super) fn tasks(&self) -> &[TaskId] {
        &self.task
    }

    pub(super) fn push(&mut self, task: &Running, end: AttemptEnd<'a>) {
        if end.may_repeat_error(task.attempts.into()) {
            self.may_repeat
                .push((self.task.len(), end.repeated_error_refund()));
        }
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
        self.cpu.push(end.cpu_micros);
        self.memory.push(end.memory_mib_seconds);
        self.http.push(end.http_bytes.map(|b| b as i64));
    }

    pub(super) async fn write(&self, tx: &impl GenericClient) -> StoreResult<()> {
        if self.may_repeat.is_empty() {
            return self.write_all(tx).await;
        }
        self.without_repeats().write_all(tx).await?;
        self.write_repeats(tx).await
    }

    /// Writes every row in one statement.
    async fn write_all(&self, tx: &impl GenericClient) -> StoreResult<()> {
        if self.task.is_empty() {
            return Ok(());
        }
        let stmt = tx
            .prepare_cached(include_str!("sql/attempt_insert.sql"))
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
                &self.cpu,
                &self.memory,
                &self.http,
            ],
        )
        .await
        .map_err(pg)?;
        Ok(())
    }

    /// These rows but those that may repeat an error.
    fn without_repeats(&self) -> AttemptRows<'a> {
        let keep = |i: usize| !self.may_repeat.iter().any(|&(r, _)| r == i);
        AttemptRows {
            task: pick_vec(&self.task, keep),
            batch: pick_vec(&self.batch, keep),
            attempt: pick_vec(&self.attempt, keep),
            node: pick_vec(&self.node, keep),
            slot: pick_vec(&self.slot, keep),
            token: pick_vec(&self.token, keep),
            group: pick_vec(&self.group, keep),
            order: pick_vec(&self.order, keep),
            started: pick_vec(&self.started, keep),
            ended: pick_vec(&self.ended, keep),
            outcome: pick_vec(&self.outcome, keep),
            error: pick_vec(&self.error, keep),
            logs: pick_vec(&self.logs, keep),
            stdout: pick_vec(&self.stdout, keep),
            stderr: pick_vec(&self.stderr, keep),
            cpu: pick_vec(&self.cpu, keep),
            memory: pick_vec(&self.memory, keep),
            http: pick_vec(&self.http, keep),
            may_repeat: Vec::new(),
        }
    }

    /// Writes the rows whose error may repeat, one statement each, and gives back to their
    /// batches what the repeats were charged.
    async fn write_repeats(&self, tx: &impl GenericClient) -> StoreResult<()> {
        if self.may_repeat.is_empty() {
            return Ok(());
        }
        let stmt = tx
            .prepare_cached(include_str!("sql/attempt_insert_repeat.sql"))
            .await
            .map_err(pg)?;
        for &(i, refund) in &self.may_repeat {
            let repeated: bool = tx
                .query_one(
                    &stmt,
                    &[
                        &self.task[i],
                        &self.batch[i],
                        &self.attempt[i],
                        &self.node[i],
                        &self.slot[i],
                        &self.token[i],
                        &self.group[i],
                        &self.order[i],
                        &self.started[i],
                        &self.ended[i],
                        &self.outcome[i],
                        &self.error[i],
                        &self.logs[i],
                        &self.stdout[i],
                        &self.stderr[i],
                        &self.cpu[i],
                        &self.memory[i],
                        &self.http[i],
                    ],
                )
                .await
                .map_err(pg)?
                .get(0);
            if repeated {
                super::quotas::add(tx, self.batch[i], 0, -refund).await?;
            }
        }
        Ok(())
    }
}

/// The elements of `values` whose index `keep` keeps.
fn pick_vec<T: Clone>(values: &[T], keep: impl Fn(usize) -> bool) -> Vec<T> {
    values
        .iter()
        .enumerate()
        .filter(|(i, _)| keep(*i))
        .map(|(_, v)| v.clone())
        .collect()
}
