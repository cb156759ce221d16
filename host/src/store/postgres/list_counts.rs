//! How many tasks a list's filter names in each state, up to a cap per stored state,
//! each state read from the cheapest source that is exact for the filter (see [`count`]).

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use super::cached::Cached;
use super::lists::{ListArgs, Source};
use super::{pg, stats};
use crate::runtime::Outcome;
use crate::store::*;

/// Counts the filter's tasks per list state, whatever the page, each stored state up to
/// [`COUNT_CAP`] (`counts_capped` when one reached it), from the cheapest source that is
/// exact for the filter: the ended totals (`task_totals`) when nothing but states is
/// asked; the ready queue and the leases for their states; unless a batch or group bounds
/// a walk, the gates' open orders for the tasks waiting at one and the dead letters for
/// the failed and cancelled; one walk of the filter's tasks for the rest, and a walk per
/// state when that one reaches the cap.
pub(super) async fn count(
    client: &impl GenericClient,
    filter: &TaskFilter,
    args: &ListArgs,
    stored: &[i32],
    page: &mut TaskPage,
) -> StoreResult<()> {
    let cap = COUNT_CAP as i64;
    let narrowed = filter.batch.is_some()
        || filter.group.is_some()
        || !filter.modules.is_empty()
        || !filter.outcomes.is_empty()
        || filter.submitted_after.is_some()
        || filter.submitted_before.is_some();
    let bounded = filter.batch.is_some() || filter.group.is_some();
    let totals = match narrowed || !stored.iter().any(|s| *s >= 3) {
        true => Vec::new(),
        false => stats::ended_counters(client).await?,
    };
    let mut walked = Vec::new();
    let mut dead = Vec::new();
    for &state in stored {
        let counted = match state {
            3..=5 if !narrowed => {
                let total = totals.iter().find(|(s, _, _)| *s == state);
                let counted = total.map_or(0, |(_, _, now)| *now).min(COUNT_CAP);
                if let Some(state) = TaskState::from_code(state.into()) {
                    page.counts.add(state, counted);
                }
                counted
            }
            1 => count_ready(client, args, &mut page.counts).await?,
            2 => count_rows(client, args, Source::Leases, &[2], cap, &mut page.counts).await?,
            0 if !bounded => {
                let counted = count_gates(client, args).await?;
                page.counts.add(TaskState::Waiting, counted);
                counted
            }
            4 | 5 if !bounded => {
                dead.push(state);
                continue;
            }
            _ => {
                walked.push(state);
                continue;
            }
        };
        page.counts_capped |= counted >= COUNT_CAP;
    }
    // A task has the outcome `succeeded` exactly when it succeeded (3): only a success
    // ends so, and a succeeded task never runs again. Counts that could only find none
    // are not made.
    if !filter.outcomes.is_empty() {
        let success = |o: &Outcome| *o == Outcome::Succeeded;
        let asked = filter.outcomes.iter().any(success);
        let only = filter.outcomes.iter().all(success);
        walked.retain(|&state| if state == 3 { asked } else { !only });
        dead.retain(|_| !only);
    }
    let dead_sql = include_str!("sql/task_count_dead.sql");
    count_states(client, dead_sql, args, &dead, page).await?;
    let walk_sql = include_str!("sql/task_count_walk.sql");
    count_states(client, walk_sql, args, &walked, page).await
}

/// Counts the filter's tasks of `states` with `sql` (along the index of tasks, or the dead
/// letters): several states in one read, exact when fewer than the cap in all, else each
/// state in a read of its own up to the cap.
async fn count_states(
    client: &impl GenericClient,
    sql: &str,
    args: &ListArgs,
    states: &[i32],
    page: &mut TaskPage,
) -> StoreResult<()> {
    if states.len() > 1 {
        let mut counts = Progress::default();
        if count_capped(client, sql, args, states, &mut counts).await? < COUNT_CAP {
            for state in TaskState::ALL {
                page.counts.add(state, counts.of(state));
            }
            return Ok(());
        }
    }
    for &state in states {
        let counted = count_capped(client, sql, args, &[state], &mut page.counts).await?;
        page.counts_capped |= counted >= COUNT_CAP;
    }
    Ok(())
}

/// Counts the filter's tasks of `states` into `counts` with `sql`, up to the cap in all;
/// returns how many it counted.
async fn count_capped(
    client: &impl GenericClient,
    sql: &str,
    args: &ListArgs,
    states: &[i32],
    counts: &mut Progress,
) -> StoreResult<u64> {
    let cap = COUNT_CAP as i64;
    let params = [
        &[&states as &(dyn ToSql + Sync)][..],
        &args.filters(),
        &[&cap],
    ]
    .concat();
    let rows = client.query(sql, &params).await.map_err(pg)?;
    Ok(add_counts(&rows, counts))
}

/// Counts the rows of `states` a source holds into `counts`, up to `cap`; returns how
/// many it counted.
async fn count_rows(
    client: &impl GenericClient,
    args: &ListArgs,
    source: Source,
    states: &[i32],
    cap: i64,
    counts: &mut Progress,
) -> StoreResult<u64> {
    let rows = args
        .query(client, &source.count_sql(), states, cap, false)
        .await?;
    Ok(add_counts(&rows, counts))
}

/// Counts the ready tasks (stored state 1) into `counts` from the ready queue
/// (`sql/task_count_ready.sql`), up to the cap; returns how many it counted.
async fn count_ready(
    client: &impl GenericClient,
    args: &ListArgs,
    counts: &mut Progress,
) -> StoreResult<u64> {
    let cap = COUNT_CAP as i64;
    let first: [&(dyn ToSql + Sync); 2] = [&args.now, &args.codes];
    let params = [&first[..], &args.filters(), &[&cap]].concat();
    let rows = client
        .rows(include_str!("sql/task_count_ready.sql"), &params)
        .await?;
    Ok(add_counts(&rows, counts))
}

/// How many stored waiting tasks (0) the filter names, from the batches' open orders
/// (`sql/task_count_gates.sql`), up to the cap.
async fn count_gates(client: &impl GenericClient, args: &ListArgs) -> StoreResult<u64> {
    let cap = COUNT_CAP as i64;
    let params = [&args.filters()[..], &[&cap]].concat();
    let row = client
        .row(include_str!("sql/task_count_gates.sql"), &params)
        .await?;
    Ok(row.get::<_, i64>(0).max(0) as u64)
}

/// Adds rows of (list state code, count) to `counts`; returns how many they count.
fn add_counts(rows: &[tokio_postgres::Row], counts: &mut Progress) -> u64 {
    let mut read = 0;
    for row in rows {
        let (code, count): (i32, i64) = (row.get(0), row.get(1));
        read += count.max(0) as u64;
        if let Some(state) = TaskState::from_code(code.into()) {
            counts.add(state, count.max(0) as u64);
        }
    }
    read
}
