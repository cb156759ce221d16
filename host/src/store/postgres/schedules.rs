//! Schedules: creating, listing, pausing and deleting them, and handling a tick in one
//! transaction that moves the schedule on only if no other node's handling came first.
//! Times are kept on the database's clock.

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::cached::Cached;
use super::{Commit, PostgresStore, batches, not_found, tasks};
use crate::store::*;

fn read(store: &PostgresStore, r: &Row) -> ScheduleInfo {
    let plan: String = r.get(4);
    ScheduleInfo {
        id: r.get(0),
        name: r.get(1),
        cron: r.get(2),
        timezone: r.get(3),
        plan: serde_json::from_str(&plan).unwrap_or_default(),
        overlap: r.get(5),
        catch_up: r.get(6),
        paused: r.get(7),
        next_due: r.get::<_, Option<i64>>(8).map(|t| store.local_time(t)),
        last_batch: r.get(9),
        missed: r.get::<_, i64>(10) as u64,
        created_at: store.local_time(r.get(11)),
    }
}

async fn find(
    store: &PostgresStore,
    client: &impl GenericClient,
    name: &str,
) -> StoreResult<ScheduleInfo> {
    let row = client
        .row_opt(include_str!("sql/schedule_get.sql"), &[&name])
        .await?
        .ok_or_else(|| not_found("schedule", name))?;
    Ok(read(store, &row))
}

pub(super) async fn create(
    store: &PostgresStore,
    spec: ScheduleSpec,
    next_due: Option<Micros>,
    now: Micros,
) -> StoreResult<ScheduleInfo> {
    let next_due = next_due.map(|t| store.db_time(t));
    let now = store.db_time(now);
    let plan = spec.plan.to_string();
    transaction!(store, Commit::Durable, |tx| {
        let created = tx
            .row_opt(
                include_str!("sql/schedule_insert.sql"),
                &[
                    &spec.name,
                    &spec.cron,
                    &spec.timezone,
                    &plan,
                    &spec.overlap,
                    &spec.catch_up,
                    &next_due,
                    &now,
                ],
            )
            .await?;
        if created.is_none() {
            return Err(errors::schedule_exists(&spec.name));
        }
        find(store, tx, &spec.name).await
    })
}

pub(super) async fn list(store: &PostgresStore) -> StoreResult<Vec<ScheduleInfo>> {
    let client = store.client(Commit::Durable).await?;
    let rows = client
        .rows(include_str!("sql/schedule_list.sql"), &[])
        .await?;
    Ok(rows.iter().map(|r| read(store, r)).collect())
}

pub(super) async fn get(store: &PostgresStore, name: &str) -> StoreResult<ScheduleInfo> {
    let client = store.client(Commit::Durable).await?;
    find(store, &client, name).await
}

pub(super) async fn ticks(
    store: &PostgresStore,
    schedule: i64,
    limit: usize,
) -> StoreResult<Vec<Tick>> {
    let client = store.client(Commit::Durable).await?;
    let rows = client
        .rows(
            include_str!("sql/schedule_ticks.sql"),
            &[&schedule, &(limit as i64)],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Tick {
            due_at: store.local_time(r.get(0)),
            fired_at: store.local_time(r.get(1)),
            result: TickResult::parse(r.get(2)).unwrap_or(TickResult::Failed),
            batch: r.get(3),
            detail: r.get(4),
        })
        .collect())
}

pub(super) async fn set_paused(
    store: &PostgresStore,
    name: &str,
    paused: bool,
    next_due: Option<Micros>,
) -> StoreResult<ScheduleInfo> {
    let next_due = next_due.map(|t| store.db_time(t));
    transaction!(store, Commit::Durable, |tx| {
        let changed = tx
            .run(
                include_str!("sql/schedule_pause.sql"),
                &[&name, &paused, &next_due],
            )
            .await?;
        if changed == 0 {
            return Err(not_found("schedule", name));
        }
        find(store, tx, name).await
    })
}

pub(super) async fn delete(store: &PostgresStore, name: &str) -> StoreResult<()> {
    let client = store.client(Commit::Durable).await?;
    let deleted = client
        .run(include_str!("sql/schedule_delete.sql"), &[&name])
        .await?;
    match deleted {
        0 => Err(not_found("schedule", name)),
        _ => Ok(()),
    }
}

pub(super) async fn due(
    store: &PostgresStore,
    now: Micros,
) -> StoreResult<(Vec<ScheduleInfo>, Option<Micros>)> {
    let now = store.db_time(now);
    let client = store.client(Commit::Durable).await?;
    let rows = client
        .rows(include_str!("sql/schedule_due.sql"), &[&now])
        .await?;
    let next: Option<i64> = client
        .row(include_str!("sql/schedule_next_due.sql"), &[&now])
        .await?
        .get(0);
    Ok((
        rows.iter().map(|r| read(store, r)).collect(),
        next.map(|t| store.local_time(t)),
    ))
}

pub(super) async fn fire(store: &PostgresStore, fire: Fire) -> StoreResult<Option<Tick>> {
    let db = |t: Micros| store.db_time(t);
    let (cursor, next_due, tick, now) = (
        fire.cursor.map(db),
        fire.next_due.map(db),
        db(fire.tick),
        db(fire.now),
    );
    let missed = i64::try_from(fire.missed).unwrap_or(i64::MAX);
    transaction!(store, Commit::Durable, |tx| {
        match cursor {
            Some(cursor) => {
                let moved = tx
                    .run(
                        include_str!("sql/schedule_advance.sql"),
                        &[&fire.schedule, &cursor, &next_due, &missed],
                    )
                    .await?;
                if moved == 0 {
                    return Ok(None);
                }
            }
            None => {
                tx.row_opt(include_str!("sql/schedule_lock.sql"), &[&fire.schedule])
                    .await?
                    .ok_or_else(|| not_found("schedule", fire.schedule))?;
            }
        }
        let batch = match &fire.batch {
            Some(open) => {
                let batch = batches::open_in(tx, &open.spec, open.handle_hash, now)
                    .await?
                    .id;
                tasks::submit_in(store, tx, batch, &open.tasks, now).await?;
                tx.run(
                    include_str!("sql/schedule_last_batch.sql"),
                    &[&fire.schedule, &batch],
                )
                .await?;
                Some(batch)
            }
            None => None,
        };
        tx.run(
            include_str!("sql/schedule_tick_insert.sql"),
            &[
                &fire.schedule,
                &tick,
                &now,
                &fire.result.as_str(),
                &batch,
                &fire.detail,
            ],
        )
        .await?;
        tx.run(
            include_str!("sql/schedule_ticks_prune.sql"),
            &[&fire.schedule],
        )
        .await?;
        Ok(Some(Tick {
            due_at: fire.tick,
            fired_at: fire.now,
            result: fire.result,
            batch,
            detail: fire.detail.clone(),
        }))
    })
}
