//! Lists of batches and tasks, newest first, paged by position, and what a pending task
//! waits on. A page of tasks is read (`sql/task_list.sql`) in one walk along the filter's
//! index (`migrations/0007_lists.sql`), or, for a state filter, from the table that holds
//! the state (ready, leases, dead letters) beside one walk for the others, and merged; its
//! counts are in `list_counts.rs`.

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use super::cached::Cached;
use super::{Commit, PostgresStore, batches, list_counts, pg, stats, tasks};
use crate::store::*;

/// Batches a filter names, newest first; one more than the limit when more follow.
pub(super) async fn batches(
    store: &PostgresStore,
    filter: BatchFilter,
) -> StoreResult<Vec<BatchInfo>> {
    let mut client = store.client(Commit::Durable).await?;
    let client = reading(&mut client).await?;
    let states: Vec<i32> = if filter.states.is_empty() {
        vec![0, 1, 2]
    } else {
        filter.states.iter().map(|s| s.code() as i32).collect()
    };
    let after = filter.after.unwrap_or(Position {
        at: Micros::MAX,
        id: i64::MAX,
    });
    let limit = filter.limit as i64 + 1;
    let rows = client
        .rows(
            include_str!("sql/batch_list.sql"),
            &[
                &states,
                &filter.created_after.unwrap_or(Micros::MIN),
                &filter.created_before.unwrap_or(Micros::MAX),
                &after.at,
                &after.id,
                &filter.batch,
                &filter.name,
                &limit,
                &filter.tenant,
            ],
        )
        .await?;
    let ids: Vec<BatchId> = rows.iter().map(|r| r.get(0)).collect();
    let list = batches::infos(&client, &ids).await?;
    client.commit().await.map_err(pg)?;
    Ok(list)
}

/// Where a task list reads one or more stored states from (`sql/task_list.sql`'s source):
/// the tasks along the filter's index, or a table that holds one state's tasks only.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    /// Every task, along the index of the filter (tasks_list_batch, _group, _module,
    /// else _submitted), skipping other states.
    Walk,
    /// The ready queue newest first (`ready_submitted`): stored state 1.
    Ready,
    /// The leases, as many as the slots of the nodes: stored state 2.
    Leases,
    /// The dead letters newest first (`dead_letters_submitted`): stored states 4 and 5.
    Dead,
}

impl Source {
    /// The rows, in place of task_list.sql's source comment; the ready queue and the dead
    /// letters are bounded by the filters they hold, so that only the rows wanted are
    /// joined to tasks.
    fn rows(self) -> &'static str {
        match self {
            Source::Walk => "tasks t",
            Source::Ready => {
                "ready r JOIN tasks t ON t.id = r.task_id
                    AND r.submitted_at >= $4 AND r.submitted_at < $5
                    AND (r.submitted_at, r.task_id) < ($6, $7)
                    AND ($8::bigint IS NULL OR r.batch_id = $8)
                    AND ($9::text IS NULL OR r.group_key = $9)"
            }
            Source::Leases => "leases s JOIN tasks t ON t.id = s.task_id",
            Source::Dead => {
                "dead_letters d JOIN tasks t ON t.id = d.task_id
                    AND d.state = ANY($1::int[])
                    AND d.submitted_at >= $4 AND d.submitted_at < $5
                    AND (d.submitted_at, d.task_id) < ($6, $7)
                    AND ($10::text[] IS NULL OR d.module = ANY($10))
                    AND ($11::text[] IS NULL OR d.outcome = ANY($11))"
            }
        }
    }

    /// The order of a page: the ready queue's and the dead letters' own indexes, else the
    /// tasks'.
    fn order(self) -> &'static str {
        match self {
            Source::Ready => "ORDER BY r.submitted_at DESC, r.task_id DESC",
            Source::Dead => "ORDER BY d.submitted_at DESC, d.task_id DESC",
            _ => "ORDER BY t.submitted_at DESC, t.id DESC",
        }
    }

    /// task_list.sql reading these rows.
    fn select(self) -> String {
        let sql = include_str!("sql/task_list.sql").trim_end();
        sql.replacen("/* source */", self.rows(), 1)
    }

    fn list_sql(self) -> String {
        format!("{} {} LIMIT $12", self.select(), self.order())
    }

    /// The rows' states counted, up to `$12` rows.
    pub(super) fn count_sql(self) -> String {
        format!(
            "SELECT list_code, COUNT(*) FROM ({} LIMIT $12) x GROUP BY 1",
            self.select()
        )
    }
}

/// The arguments of task_list.sql but the stored states and the limit.
pub(super) struct ListArgs {
    pub(super) now: Micros,
    pub(super) codes: Vec<i32>,
    pub(super) submitted_after: Micros,
    pub(super) submitted_before: Micros,
    pub(super) after: Position,
    pub(super) batch: Option<BatchId>,
    pub(super) group: Option<String>,
    pub(super) modules: Option<Vec<String>>,
    pub(super) outcomes: Option<Vec<&'static str>>,
}

impl ListArgs {
    fn new(filter: &TaskFilter) -> Self {
        let states: &[TaskState] = match filter.states.is_empty() {
            true => &TaskState::ALL,
            false => &filter.states,
        };
        ListArgs {
            now: filter.now,
            codes: states.iter().map(|s| s.code() as i32).collect(),
            submitted_after: filter.submitted_after.unwrap_or(Micros::MIN),
            submitted_before: filter.submitted_before.unwrap_or(Micros::MAX),
            after: start(filter.submitted_before, filter.after),
            batch: filter.batch,
            group: filter.group.clone(),
            modules: (!filter.modules.is_empty())
                .then(|| filter.modules.iter().map(|m| m.to_hex()).collect()),
            outcomes: (!filter.outcomes.is_empty())
                .then(|| filter.outcomes.iter().map(|o| o.as_str()).collect()),
        }
    }

    /// The filter as the count statements take it, in this order: submitted at or after,
    /// submitted before, batch, group, modules, outcomes.
    pub(super) fn filters(&self) -> [&(dyn ToSql + Sync); 6] {
        [
            &self.submitted_after,
            &self.submitted_before,
            &self.batch,
            &self.group,
            &self.modules,
            &self.outcomes,
        ]
    }

    /// Reads `sql` over the stored states `states`, up to `limit` rows; `paged`: only the
    /// rows after the filter's position (counts are of every page).
    pub(super) async fn query(
        &self,
        client: &impl GenericClient,
        sql: &str,
        states: &[i32],
        limit: i64,
        paged: bool,
    ) -> StoreResult<Vec<tokio_postgres::Row>> {
        let after = match paged {
            true => self.after,
            false => start(Some(self.submitted_before), None),
        };
        let args: [&(dyn ToSql + Sync); 12] = [
            &states,
            &self.now,
            &self.codes,
            &self.submitted_after,
            &self.submitted_before,
            &after.at,
            &after.id,
            &self.batch,
            &self.group,
            &self.modules,
            &self.outcomes,
            &limit,
        ];
        client.query(sql, &args).await.map_err(pg)
    }
}

/// Where a walk newest first starts: after the page's position, and before the first task
/// submitted at `before`. One bound, so that an index scan starts there instead of at the
/// newest task (a backward scan starts at one bound and checks the others on every row).
fn start(before: Option<Micros>, after: Option<Position>) -> Position {
    let before = Position {
        at: before.unwrap_or(Micros::MAX),
        id: i64::MIN,
    };
    let after = after.unwrap_or(Position {
        at: Micros::MAX,
        id: i64::MAX,
    });
    std::cmp::min_by_key(before, after, |p| (p.at, p.id))
}

/// A page of the tasks a filter names, newest first (one more than the limit when more
/// follow), and how many it names in each state, each count capped.
pub(super) async fn tasks(store: &PostgresStore, filter: TaskFilter) -> StoreResult<TaskPage> {
    let mut client = store.client(Commit::Durable).await?;
    let client = reading(&mut client).await?;
    let mut args = ListArgs::new(&filter);
    args.now = store.db_time(filter.now);
    let stored: Vec<i32> = filter.stored_states().iter().map(|&s| s as i32).collect();
    let limit = filter.limit as i64 + 1;
    let mut page = TaskPage::default();
    for (source, states) in page_sources(&filter, &stored) {
        let rows = args
            .query(&client, &source.list_sql(), &states, limit, true)
            .await?;
        page.tasks.extend(rows.iter().map(tasks::row));
    }
    page.tasks
        .sort_by_key(|t| std::cmp::Reverse((t.submitted_at, t.id)));
    page.tasks.truncate(filter.limit + 1);
    list_counts::count(&client, &filter, &args, &stored, &mut page).await?;
    client.commit().await.map_err(pg)?;
    Ok(page)
}

/// A read-only transaction for a list's statements, so that its page and counts see one
/// snapshot, without JIT compilation or parallel workers: a list reads a page's rows and
/// counts up to a cap, which takes less than either costs to start (their costs, estimated
/// over the whole table, would call for both).
async fn reading(
    client: &mut deadpool_postgres::Object,
) -> StoreResult<deadpool_postgres::Transaction<'_>> {
    let tx = stats::snapshot(client).await?;
    tx.batch_execute("SET LOCAL jit = off; SET LOCAL max_parallel_workers_per_gather = 0")
        .await
        .map_err(pg)?;
    Ok(tx)
}

/// Where a page's rows are read from: one walk of the tasks, along the filter's index,
/// for every stored state when no state is asked (the newest tasks are at its start) or a
/// batch or group bounds the walk; else the ready queue, the leases and the dead letters
/// for their states, and one walk for the others.
fn page_sources(filter: &TaskFilter, stored: &[i32]) -> Vec<(Source, Vec<i32>)> {
    if filter.states.is_empty() || filter.batch.is_some() || filter.group.is_some() {
        return vec![(Source::Walk, stored.to_vec())];
    }
    let mut sources = Vec::new();
    let walked: Vec<i32> = stored
        .iter()
        .copied()
        .filter(|s| matches!(s, 0 | 3))
        .collect();
    if !walked.is_empty() {
        sources.push((Source::Walk, walked));
    }
    for (states, source) in [
        (&[1][..], Source::Ready),
        (&[2], Source::Leases),
        (&[4, 5], Source::Dead),
    ] {
        let held: Vec<i32> = states
            .iter()
            .copied()
            .filter(|s| stored.contains(s))
            .collect();
        if !held.is_empty() {
            sources.push((source, held));
        }
    }
    sources
}

/// What each of `tasks` may wait on; a task that does not exist is left out.
pub(super) async fn hold(store: &PostgresStore, ids: &[TaskId]) -> StoreResult<Vec<HoldFacts>> {
    let client = store.client(Commit::Durable).await?;
    let stmt = client
        .prepare_cached(include_str!("sql/task_hold.sql"))
        .await
        .map_err(pg)?;
    let mut facts = Vec::with_capacity(ids.len());
    for &task in ids {
        let Some(r) = client.query_opt(&stmt, &[&task]).await.map_err(pg)? else {
            continue;
        };
        let order: Option<i64> = r.get(3);
        let open: Option<i64> = r.get(4);
        let group = r.get::<_, Option<String>>(8).map(|key| GroupFacts {
            key,
            paused: r.get::<_, Option<bool>>(9).unwrap_or(false),
            limit: r.get::<_, Option<i32>>(10).unwrap_or(1).max(0) as u32,
            running: r.get::<_, Option<i32>>(11).unwrap_or(0).max(0) as u64,
            rate: Bucket::stored(
                r.get::<_, Option<i32>>(12).map(i64::from),
                r.get(13),
                r.get::<_, Option<i32>>(14).map(i64::from),
                r.get::<_, Option<i64>>(15).unwrap_or(0),
            ),
            held_until: r.get::<_, Option<i64>>(17).unwrap_or(0),
        });
        facts.push(HoldFacts {
            task,
            state: r.get::<_, i32>(0).into(),
            not_before: r.get(1),
            attempts: r.get::<_, i32>(2).max(0) as u32,
            gate: order.zip(open.map(|n| n.max(0) as u64)),
            batch_paused: r.get(5),
            batch_max_parallel: r.get::<_, Option<i32>>(6).map(|n| n.max(0) as u32),
            batch_running: r.get::<_, i32>(7).max(0) as u64,
            group,
            tenant: r.get::<_, Option<String>>(18).map(|name| TenantFacts {
                name,
                max_running: r.get::<_, Option<i32>>(19).map(|n| n.max(0) as u32),
                running: r.get::<_, Option<i32>>(20).unwrap_or(0).max(0) as u64,
                held_until: r.get::<_, Option<i64>>(21).unwrap_or(0),
            }),
            deps_open: r.get::<_, i32>(16).max(0) as u64,
            deps: Vec::new(),
        });
    }
    for fact in facts.iter_mut().filter(|f| f.deps_open > 0) {
        let rows = client
            .rows(
                "SELECT d.id, d.task_key FROM task_edges e JOIN tasks d ON d.id = e.dep_id
                 WHERE e.task_id = $1 AND d.state < 3 ORDER BY d.id LIMIT $2",
                &[&fact.task, &(OPEN_DEPS_SHOWN as i64)],
            )
            .await?;
        fact.deps = rows
            .iter()
            .map(|r| OpenDep {
                id: r.get(0),
                key: r.get(1),
            })
            .collect();
    }
    Ok(facts)
}
