//! Tenants and their tokens (see [`crate::store::tenant`]).

use std::collections::BTreeMap;

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::cached::Cached;
use super::{Commit, PostgresStore, pg};
use crate::store::fair;
use crate::store::*;

/// A JSON column's value; none when NULL or unreadable.
fn json<T: serde::de::DeserializeOwned>(text: Option<&str>) -> Option<T> {
    text.and_then(|text| serde_json::from_str(text).ok())
}

/// A tenant row of `tenant_list.sql`, its budget as it stands at `now`.
fn tenant(r: &Row, now: Micros) -> TenantInfo {
    TenantInfo {
        id: r.get(0),
        name: r.get(1),
        created_at: r.get(2),
        tokens: r.get::<_, i64>(3) as u64,
        max_priority: r.get(4),
        shared_groups: json(r.get(5)).unwrap_or_default(),
        modules: json(r.get(6)),
        allow_http: json(r.get(7)),
        max_running: r.get::<_, Option<i32>>(8).map(|n| n as u32),
        running: r.get::<_, i32>(9) as u32,
        max_limits: json(r.get(10)).unwrap_or_default(),
        max_open: r.get::<_, Option<i32>>(11).map(|n| n as u32),
        open: r.get::<_, i64>(12) as u64,
        slot_micros: r.get::<_, i64>(13) as u64,
        cpu_micros: r.get::<_, i64>(14) as u64,
        memory_mib_seconds: r.get(15),
        weight: r.get::<_, i32>(25) as u32,
        http_bytes: r.get::<_, i64>(26) as u64,
        budget: None,
        budget_used: BudgetUsed::default(),
        held_until: None,
    }
    .with_budget(window(r, 16), r.get(24), now)
}

/// The budget's columns of a row from `first` on: `budget_period`, `cpu_budget`,
/// `memory_budget`, `http_budget`, `budget_window`, `budget_used`, `memory_used`,
/// `http_used`.
pub(super) fn window(r: &Row, first: usize) -> Window {
    let at = |i: usize| first + i;
    Window {
        budget: Budget::from_stored([r.get(at(0)), r.get(at(1)), r.get(at(2)), r.get(at(3))]),
        start: r.get(at(4)),
        used: Spent {
            cpu_micros: r.get(at(5)),
            memory_mib_ms: r.get(at(6)),
            http_bytes: r.get(at(7)),
        },
    }
}

fn token(r: &Row) -> TokenInfo {
    TokenInfo {
        id: r.get(0),
        tenant: r.get(1),
        created_at: r.get(2),
        revoked_at: r.get(3),
    }
}

pub(super) async fn add(
    store: &PostgresStore,
    name: String,
    now: Micros,
) -> StoreResult<TenantInfo> {
    check_tenant_name(&name)?;
    let client = store.client(Commit::Durable).await?;
    let added = client
        .row_opt(
            "INSERT INTO tenants (name, created_at) VALUES ($1, $2)
             ON CONFLICT (name) DO NOTHING RETURNING id",
            &[&name, &now],
        )
        .await?;
    let Some(row) = added else {
        return Err(tenant_exists(&name));
    };
    get(store, row.get(0)).await
}

/// Every tenant, or the one of id `only`.
/// Every tenant, or the one of id `only`, their budgets as they stand now.
async fn tenants(
    store: &PostgresStore,
    client: &impl GenericClient,
    only: Option<TenantId>,
) -> StoreResult<Vec<TenantInfo>> {
    let now = store.db_time(now_micros());
    let rows = client
        .rows(include_str!("sql/tenant_list.sql"), &[&only])
        .await?;
    Ok(rows.iter().map(|r| tenant(r, now)).collect())
}

pub(super) async fn list(store: &PostgresStore) -> StoreResult<Vec<TenantInfo>> {
    let client = store.client(Commit::Durable).await?;
    tenants(store, &client, None).await
}

pub(super) async fn get(store: &PostgresStore, id: TenantId) -> StoreResult<TenantInfo> {
    let client = store.client(Commit::Durable).await?;
    tenants(store, &client, Some(id))
        .await?
        .pop()
        .ok_or_else(|| no_tenant(&id.to_string()))
}

/// What tenant `id`'s batches may do, its ceiling `server_max_priority` where it sets
/// none.
pub(super) async fn rules(
    store: &PostgresStore,
    id: TenantId,
    server_max_priority: i32,
) -> StoreResult<TenantRules> {
    let client = store.client(Commit::Durable).await?;
    let row = client
        .row_opt(include_str!("sql/tenant_rules.sql"), &[&id])
        .await?
        .ok_or_else(|| no_tenant(&id.to_string()))?;
    Ok(TenantRules {
        name: row.get(0),
        max_priority: row.get::<_, Option<i32>>(1).unwrap_or(server_max_priority),
        shared_groups: json(row.get(2)).unwrap_or_default(),
        modules: json(row.get(3)),
        allow_http: json(row.get(4)),
        max_limits: json(row.get(5)).unwrap_or_default(),
    })
}

pub(super) async fn set(
    store: &PostgresStore,
    name: String,
    change: TenantChange,
    now: Micros,
) -> StoreResult<TenantInfo> {
    let groups = change
        .shared_groups
        .map(|groups| {
            check_shared_groups(groups).map(|g| serde_json::to_string(&g).expect("strings"))
        })
        .transpose()?;
    let modules = change
        .modules
        .clone()
        .flatten()
        .map(|m| check_modules(m).map(|m| serde_json::to_string(&m).expect("strings")))
        .transpose()?;
    let origins = change
        .allow_http
        .clone()
        .flatten()
        .map(|o| serde_json::to_string(&o).expect("strings"));
    let max_running = change.max_running.map(check_max_running).transpose()?;
    let max_open = change.max_open.map(check_max_open).transpose()?;
    let max_limits = change.max_limits.as_ref().map(|maxima| {
        (*maxima != TenantMaxima::default())
            .then(|| serde_json::to_string(maxima).expect("maxima serialize"))
    });
    let [period, cpu, memory, http] = Budget::columns(change.budget.flatten());
    let weight = change
        .weight
        .map(|w| fair::check_weight(w).map(|w| w as i32))
        .transpose()?;
    transaction!(store, Commit::Durable, |tx| {
        let id = tenant_id(tx, &name).await?;
        tx.run(
            include_str!("sql/tenant_set.sql"),
            &[
                &id,
                &change.max_priority.is_some(),
                &change.max_priority.flatten(),
                &groups,
                &change.modules.is_some(),
                &modules,
                &change.allow_http.is_some(),
                &origins,
                &max_running.is_some(),
                &max_running.flatten().map(|n| n as i32),
                &max_limits.is_some(),
                &max_limits.clone().flatten(),
                &max_open.is_some(),
                &max_open.flatten().map(|n| n as i32),
                &change.budget.is_some(),
                &cpu,
                &period,
                &now,
                &weight,
                &memory,
                &http,
            ],
        )
        .await?;
        if let Some(ceiling) = change.ceiling {
            lower_in(store, tx, id, ceiling).await?;
        }
        if change.budget.is_some() {
            // A budget raised or lifted may let held work go on any node.
            store.notify(tx, "w").await?;
        }
        if weight.is_some() {
            // Nodes hand back what they reserved, so the next claims share it anew.
            store.notify(tx, "r").await?;
        }
        tenants(store, tx, Some(id))
            .await?
            .pop()
            .ok_or_else(|| no_tenant(&name))
    })
}

/// Lowers to `ceiling` tenant `id`'s batches' priorities above it, and their tasks' not
/// started; returns how many tasks changed.
pub(super) async fn lower_priorities(
    store: &PostgresStore,
    id: TenantId,
    ceiling: i32,
) -> StoreResult<u64> {
    transaction!(store, Commit::Durable, |tx| {
        lower_in(store, tx, id, ceiling).await
    })
}

/// [`lower_priorities`] in the caller's transaction.
async fn lower_in(
    store: &PostgresStore,
    tx: &impl GenericClient,
    id: TenantId,
    ceiling: i32,
) -> StoreResult<u64> {
    let changed: i64 = tx
        .row(include_str!("sql/tenant_lower.sql"), &[&ceiling, &id])
        .await?
        .get(0);
    if changed > 0 {
        // Nodes hand back what they reserved, so the next claims take the new order.
        store.notify(tx, "r").await?;
    }
    Ok(changed as u64)
}

/// Takes the open-limit lock of batch `$1`'s tenant, when it has an open limit: a
/// submission or re-drive into its batches counts its open tasks, and adds to them, one
/// after another across nodes. Taken after the batches' own locks.
pub(super) const LOCK_OPEN_SQL: &str =
    "SELECT pg_advisory_xact_lock('tenants'::regclass::oid::int, n.id::int)
     FROM batches b JOIN tenants n ON n.id = b.tenant_id
     WHERE b.id = $1 AND n.max_open IS NOT NULL";

/// Batch `$1`'s tenant's name, open limit and open tasks, when it has an open limit.
pub(super) const OPEN_SQL: &str = "SELECT n.name, n.max_open,
            (SELECT coalesce(SUM(o.open), 0)::bigint FROM batch_orders o WHERE o.tenant_id = n.id)
     FROM batches b JOIN tenants n ON n.id = b.tenant_id
     WHERE b.id = $1 AND n.max_open IS NOT NULL";

/// Refuses `adds` more open tasks past the open limit `row` (of [`OPEN_SQL`]) states.
pub(super) fn check_open(row: Option<&Row>, adds: u64) -> StoreResult<()> {
    let Some(row) = row else {
        return Ok(());
    };
    let (name, max_open, open): (&str, i32, i64) = (row.get(0), row.get(1), row.get(2));
    crate::store::check_open(name, max_open as u32, open as u64, adds)
}

/// Takes the open-limit locks of the tenants `adds` names that have an open limit, in id
/// order, and refuses the tasks each would get back past its limit: a re-drive.
pub(super) async fn check_open_many(
    tx: &impl GenericClient,
    adds: &BTreeMap<TenantId, u64>,
) -> StoreResult<()> {
    let lock = tx
        .prepare_cached(
            "SELECT pg_advisory_xact_lock('tenants'::regclass::oid::int, id::int)
             FROM tenants WHERE id = $1 AND max_open IS NOT NULL",
        )
        .await
        .map_err(pg)?;
    let open = tx
        .prepare_cached(
            "SELECT name, max_open,
                    (SELECT coalesce(SUM(o.open), 0)::bigint FROM batch_orders o
                     WHERE o.tenant_id = $1)
             FROM tenants WHERE id = $1 AND max_open IS NOT NULL",
        )
        .await
        .map_err(pg)?;
    for (tenant, &adds) in adds {
        tx.execute(&lock, &[tenant]).await.map_err(pg)?;
        let row = tx.query_opt(&open, &[tenant]).await.map_err(pg)?;
        check_open(row.as_ref(), adds)?;
    }
    Ok(())
}

async fn tenant_id(client: &impl GenericClient, name: &str) -> StoreResult<TenantId> {
    client
        .row_opt("SELECT id FROM tenants WHERE name = $1", &[&name])
        .await?
        .map(|r| r.get(0))
        .ok_or_else(|| no_tenant(name))
}

pub(super) async fn token_add(
    store: &PostgresStore,
    tenant: String,
    secret_hash: [u8; 32],
    now: Micros,
) -> StoreResult<TokenInfo> {
    let client = store.client(Commit::Durable).await?;
    let id = tenant_id(&client, &tenant).await?;
    let row = client
        .row(
            "INSERT INTO tenant_tokens (tenant_id, secret_hash, created_at) VALUES ($1, $2, $3)
             RETURNING id",
            &[&id, &&secret_hash[..], &now],
        )
        .await?;
    Ok(TokenInfo {
        id: row.get(0),
        tenant,
        created_at: now,
        revoked_at: None,
    })
}

async fn tokens(client: &impl GenericClient, tenant: &str) -> StoreResult<Vec<TokenInfo>> {
    tenant_id(client, tenant).await?;
    let rows = client
        .rows(include_str!("sql/token_list.sql"), &[&tenant])
        .await?;
    Ok(rows.iter().map(token).collect())
}

pub(super) async fn token_list(
    store: &PostgresStore,
    tenant: String,
) -> StoreResult<Vec<TokenInfo>> {
    let client = store.client(Commit::Durable).await?;
    tokens(&client, &tenant).await
}

pub(super) async fn token_revoke(
    store: &PostgresStore,
    tenant: String,
    token_id: i64,
    now: Micros,
) -> StoreResult<TokenInfo> {
    let client = store.client(Commit::Durable).await?;
    let id = tenant_id(&client, &tenant).await?;
    client
        .run(
            "UPDATE tenant_tokens SET revoked_at = coalesce(revoked_at, $1)
             WHERE id = $2 AND tenant_id = $3",
            &[&now, &token_id, &id],
        )
        .await?;
    tokens(&client, &tenant)
        .await?
        .into_iter()
        .find(|t| t.id == token_id)
        .ok_or_else(|| no_token(&tenant, token_id))
}

pub(super) async fn token_check(
    store: &PostgresStore,
    token_id: i64,
    secret_hash: [u8; 32],
) -> StoreResult<TenantId> {
    let client = store.client(Commit::Durable).await?;
    let found = client
        .row_opt(
            "SELECT tenant_id, secret_hash FROM tenant_tokens
             WHERE id = $1 AND revoked_at IS NULL",
            &[&token_id],
        )
        .await?;
    match found {
        Some(r) if r.get::<_, &[u8]>(1) == secret_hash.as_slice() => Ok(r.get(0)),
        _ => Err(StoreError::NotFound {
            what: "token",
            id: token_id.to_string(),
        }),
    }
}
