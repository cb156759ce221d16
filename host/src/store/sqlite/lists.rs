//! Lists of batches and tasks, newest first, paged by position, and what a pending task
//! waits on. Each list statement (`sql/batch_list.sql`, `sql/task_list.sql`) gets one
//! clause per filter given, so that SQLite walks the index that starts with it
//! (`migrations/0008_lists.sql`); a task list reads one stored state (and module) at a
//! time and merges them.

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use super::{batches, internal, tasks};
use crate::runtime::Digest;
use crate::store::*;

/// Batches a filter names, newest first; one more than the limit when more follow.
pub(super) fn batches(conn: &Connection, filter: BatchFilter) -> StoreResult<Vec<BatchInfo>> {
    let mut sql = String::from(include_str!("sql/batch_list.sql").trim_end());
    let states: Vec<i64> = if filter.states.is_empty() {
        vec![0, 1, 2]
    } else {
        filter.states.iter().map(|s| s.code()).collect()
    };
    let after = filter.after.unwrap_or(Position {
        at: Micros::MAX,
        id: i64::MAX,
    });
    let mut args: Vec<Value> = vec![
        serde_json::to_string(&states).expect("codes").into(),
        filter.created_after.unwrap_or(Micros::MIN).into(),
        filter.created_before.unwrap_or(Micros::MAX).into(),
        after.at.into(),
        after.id.into(),
    ];
    if let Some(batch) = filter.batch {
        sql.push_str(" AND b.id = ?");
        args.push(batch.into());
    }
    if let Some(name) = filter.name {
        sql.push_str(" AND b.name = ?");
        args.push(name.into());
    }
    if let Some(tenant) = filter.tenant {
        sql.push_str(" AND b.tenant_id = ?");
        args.push(tenant.into());
    }
    sql.push_str(" ORDER BY b.created_at DESC, b.id DESC LIMIT ?");
    args.push((filter.limit as i64 + 1).into());
    let ids: Vec<BatchId> = {
        let mut stmt = conn.prepare_cached(&sql).map_err(internal)?;
        let rows = stmt
            .query_map(params_from_iter(args), |r| r.get(0))
            .map_err(internal)?;
        rows.collect::<Result<_, _>>().map_err(internal)?
    };
    ids.into_iter().map(|id| batches::get(conn, id)).collect()
}

/// One read of a task list: a stored state, and the module and outcome if some are
/// asked (each read walks one index range in order; the reads are merged).
#[derive(Clone, Copy)]
struct Read {
    state: i64,
    module: Option<Digest>,
    outcome: Option<&'static str>,
}

/// A page of the tasks a filter names, newest first (one more than the limit when more
/// follow), and how many it names in each state, each count capped.
pub(super) fn tasks(conn: &Connection, filter: TaskFilter) -> StoreResult<TaskPage> {
    let mut page = TaskPage::default();
    let modules: Vec<Option<Digest>> = match filter.modules.is_empty() {
        true => vec![None],
        false => filter.modules.iter().copied().map(Some).collect(),
    };
    let outcomes: Vec<Option<&'static str>> = match filter.outcomes.is_empty() {
        true => vec![None],
        false => filter.outcomes.iter().map(|o| Some(o.as_str())).collect(),
    };
    for state in filter.stored_states() {
        let mut count = 0;
        for &module in &modules {
            for &outcome in &outcomes {
                let read = Read {
                    state,
                    module,
                    outcome,
                };
                page.tasks.extend(list(conn, &filter, read)?);
                count += self::count(conn, &filter, read, &mut page.counts)?;
            }
        }
        page.counts_capped |= count >= COUNT_CAP;
    }
    page.tasks
        .sort_by_key(|t| std::cmp::Reverse((t.submitted_at, t.id)));
    page.tasks.truncate(filter.limit + 1);
    Ok(page)
}

/// The rows of one read, newest first: one more than the limit at most.
fn list(conn: &Connection, filter: &TaskFilter, read: Read) -> StoreResult<Vec<TaskInfo>> {
    let after = filter.after.unwrap_or(Position {
        at: Micros::MAX,
        id: i64::MAX,
    });
    let mut args: Vec<Value> = vec![
        read.state.into(),
        filter.now.into(),
        filter.codes_json().into(),
        filter.submitted_after.unwrap_or(Micros::MIN).into(),
        filter.submitted_before.unwrap_or(Micros::MAX).into(),
        after.at.into(),
        after.id.into(),
    ];
    let mut sql = narrowed(include_str!("sql/task_list.sql"), filter, read, &mut args);
    sql.push_str(" ORDER BY t.submitted_at DESC, t.id DESC LIMIT ?");
    args.push((filter.limit as i64 + 1).into());
    let mut stmt = conn.prepare_cached(&sql).map_err(internal)?;
    let rows = stmt
        .query_map(params_from_iter(args), tasks::row)
        .map_err(internal)?;
    rows.collect::<Result<_, _>>().map_err(internal)
}

/// Counts the tasks of one read into `counts`, whatever the cursor, up to the cap;
/// returns how many it counted.
fn count(
    conn: &Connection,
    filter: &TaskFilter,
    read: Read,
    counts: &mut Progress,
) -> StoreResult<u64> {
    let cap = Value::from(COUNT_CAP as i64);
    let submitted: [Value; 2] = [
        filter.submitted_after.unwrap_or(Micros::MIN).into(),
        filter.submitted_before.unwrap_or(Micros::MAX).into(),
    ];
    let state = TaskState::from_code(read.state).filter(|_| matches!(read.state, 0 | 3 | 4 | 5));
    if let Some(state) = state {
        // The state shown is the stored one: count index entries.
        if !filter.states.is_empty() && !filter.states.contains(&state) {
            return Ok(0);
        }
        let mut args: Vec<Value> = vec![read.state.into()];
        args.extend(submitted);
        let mut sql = narrowed(include_str!("sql/task_count.sql"), filter, read, &mut args);
        sql.push_str(" LIMIT ?)");
        args.push(cap);
        let counted: u64 = conn
            .prepare_cached(&sql)
            .map_err(internal)?
            .query_row(params_from_iter(args), |r| r.get(0))
            .map_err(internal)?;
        counts.add(state, counted);
        return Ok(counted);
    }
    // Ready, claimed: the state shown is read from each task.
    let mut args: Vec<Value> = vec![read.state.into()];
    args.extend(submitted);
    args.extend([filter.now.into(), filter.codes_json().into()]);
    let sql = narrowed(
        include_str!("sql/task_count_split.sql"),
        filter,
        read,
        &mut args,
    );
    let sql = format!("{sql} LIMIT ?) GROUP BY 1");
    args.push(cap);
    let mut stmt = conn.prepare_cached(&sql).map_err(internal)?;
    let rows = stmt
        .query_map(params_from_iter(args), |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, u64>(1)?))
        })
        .map_err(internal)?;
    let mut counted = 0;
    for row in rows {
        let (code, n) = row.map_err(internal)?;
        counted += n;
        if let Some(state) = TaskState::from_code(code) {
            counts.add(state, n);
        }
    }
    Ok(counted)
}

/// `sql` (task_list.sql or task_count.sql) walking the index of the most selective
/// filter given (see `migrations/0008_lists.sql`), with one clause per filter, whose
/// values are pushed on `args`. Claimed tasks are few and listed as ready
/// (`migrations/0012_listed.sql`): a read of them walks tasks_running.
fn narrowed(sql: &str, filter: &TaskFilter, read: Read, args: &mut Vec<Value>) -> String {
    let index = if read.state == 2 {
        "tasks_running"
    } else if filter.batch.is_some() {
        "tasks_list_batch"
    } else if filter.group.is_some() {
        "tasks_list_group"
    } else if read.module.is_some() {
        "tasks_list_module"
    } else if read.outcome.is_some() {
        "tasks_list_outcome"
    } else {
        "tasks_list_state"
    };
    let mut sql = sql
        .trim_end()
        .replacen("/* index */", &format!("INDEXED BY {index}"), 1);
    if read.state == 2 {
        // The partial index's condition, spelled out for the planner.
        sql.push_str(" AND t.state = 2");
    }
    if let Some(batch) = filter.batch {
        sql.push_str(" AND t.batch_id = ?");
        args.push(batch.into());
    }
    if let Some(group) = &filter.group {
        sql.push_str(" AND t.group_key = ?");
        args.push(group.clone().into());
    }
    if let Some(module) = read.module {
        sql.push_str(" AND t.module = ?");
        args.push(module.to_hex().into());
    }
    if let Some(outcome) = read.outcome {
        sql.push_str(" AND t.outcome = ?");
        args.push(outcome.to_owned().into());
    }
    sql
}

/// What each of `tasks` may wait on; a task that does not exist is left out.
pub(super) fn hold(conn: &Connection, ids: &[TaskId]) -> StoreResult<Vec<HoldFacts>> {
    let mut stmt = conn
        .prepare_cached(include_str!("sql/task_hold.sql"))
        .map_err(internal)?;
    let mut facts = Vec::with_capacity(ids.len());
    for &task in ids {
        let found = stmt
            .query_row([task], |r| {
                let order: Option<i64> = r.get(3)?;
                let open: Option<u64> = r.get(4)?;
                let key: Option<String> = r.get(8)?;
                let group = match key {
                    Some(key) => Some(GroupFacts {
                        key,
                        paused: r.get::<_, Option<bool>>(9)?.unwrap_or(false),
                        limit: r.get::<_, Option<u32>>(10)?.unwrap_or(1),
                        running: r.get::<_, Option<u64>>(11)?.unwrap_or(0),
                        rate: Bucket::stored(
                            r.get(12)?,
                            r.get(13)?,
                            r.get(14)?,
                            r.get::<_, Option<i64>>(15)?.unwrap_or(0),
                        ),
                        held_until: r.get::<_, Option<i64>>(17)?.unwrap_or(0),
                    }),
                    None => None,
                };
                Ok(HoldFacts {
                    task,
                    state: r.get(0)?,
                    not_before: r.get(1)?,
                    attempts: r.get(2)?,
                    gate: order.zip(open),
                    batch_paused: r.get(5)?,
                    batch_max_parallel: r.get(6)?,
                    batch_running: r.get(7)?,
                    group,
                    tenant: match r.get::<_, Option<String>>(18)? {
                        Some(name) => Some(TenantFacts {
                            name,
                            max_running: r.get(19)?,
                            running: r.get::<_, Option<u64>>(20)?.unwrap_or(0),
                            held_until: r.get::<_, Option<i64>>(21)?.unwrap_or(0),
                        }),
                        None => None,
                    },
                    deps_open: r.get(16)?,
                    deps: Vec::new(),
                })
            })
            .optional()
            .map_err(internal)?;
        facts.extend(found);
    }
    let mut open = conn
        .prepare_cached(
            "SELECT d.id, d.task_key FROM task_edges e JOIN tasks d ON d.id = e.dep_id \
             WHERE e.task_id = ? AND d.state < 3 ORDER BY d.id LIMIT ?",
        )
        .map_err(internal)?;
    for fact in facts.iter_mut().filter(|f| f.deps_open > 0) {
        let rows = open
            .query_map(params![fact.task, OPEN_DEPS_SHOWN as i64], |r| {
                Ok(OpenDep {
                    id: r.get(0)?,
                    key: r.get(1)?,
                })
            })
            .map_err(internal)?;
        fact.deps = rows.collect::<Result<_, _>>().map_err(internal)?;
    }
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan of each list statement: every table read along an index, in its order.
    fn plan(conn: &Connection, sql: &str, args: usize) -> Vec<String> {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let nulls = vec![Value::Null; args];
        let rows = stmt.query_map(params_from_iter(nulls), |r| r.get::<_, String>(3));
        rows.unwrap().map(Result::unwrap).collect()
    }

    fn assert_indexed(plan: &[String], index: &str, what: &str) {
        assert!(
            plan.iter().any(|step| step.contains(index)),
            "{what} walks {index}: {plan:?}"
        );
        for step in plan {
            let table = ["SCAN t", "SCAN b"]
                .iter()
                .any(|scan| step == scan || step.starts_with(&format!("{scan} ")));
            let scans_table = table && !step.contains("USING");
            assert!(
                !scans_table && !step.contains("TEMP B-TREE"),
                "{what}: {plan:?}"
            );
        }
    }

    #[test]
    fn every_list_filter_walks_an_index_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let conn = super::super::schema::open(&dir.path().join("q.db")).unwrap();
        let base = TaskFilter::default();
        let digest = Digest([1; 32]);
        let cases = [
            (TaskFilter::default(), None, "tasks_list_state", "no filter"),
            (
                TaskFilter {
                    batch: Some(1),
                    ..base.clone()
                },
                None,
                "tasks_list_batch",
                "a batch",
            ),
            (
                TaskFilter {
                    group: Some("g".into()),
                    ..base.clone()
                },
                None,
                "tasks_list_group",
                "a group",
            ),
            (base.clone(), Some(digest), "tasks_list_module", "a module"),
            (
                TaskFilter {
                    outcomes: vec![crate::runtime::Outcome::Trap],
                    submitted_after: Some(1),
                    ..base.clone()
                },
                None,
                "tasks_list_outcome",
                "an outcome and a time",
            ),
        ];
        for (filter, module, index, what) in cases {
            let read = Read {
                state: 4,
                module,
                outcome: filter.outcomes.first().map(|o| o.as_str()),
            };
            let mut args = vec![Value::Null; 7];
            let sql = narrowed(include_str!("sql/task_list.sql"), &filter, read, &mut args);
            let sql = format!("{sql} ORDER BY t.submitted_at DESC, t.id DESC LIMIT ?");
            assert_indexed(&plan(&conn, &sql, args.len() + 1), index, what);
            let mut args = vec![Value::Null; 3];
            let sql = narrowed(include_str!("sql/task_count.sql"), &filter, read, &mut args);
            let sql = format!("{sql} LIMIT ?)");
            assert_indexed(&plan(&conn, &sql, args.len() + 1), index, what);
        }
        let sql = include_str!("sql/batch_list.sql").trim_end();
        let ordered = " ORDER BY b.created_at DESC, b.id DESC LIMIT ?";
        assert_indexed(
            &plan(&conn, &format!("{sql}{ordered}"), 6),
            "batches_created",
            "batches",
        );
        let named = format!("{sql} AND b.name = ?{ordered}");
        assert_indexed(&plan(&conn, &named, 7), "batches_name", "batches by name");
        let owned = format!("{sql} AND b.tenant_id = ?{ordered}");
        assert_indexed(
            &plan(&conn, &owned, 7),
            "batches_tenant",
            "a tenant's batches",
        );
    }
}
