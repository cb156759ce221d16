//! Tenants and their tokens (see [`crate::store::tenant`]).

use rusqlite::{Connection, OptionalExtension, Row, Transaction, params};

use super::internal;
use crate::store::fair;
use crate::store::*;

/// A JSON column's value; none when NULL or unreadable.
fn json<T: serde::de::DeserializeOwned>(text: Option<String>) -> Option<T> {
    text.and_then(|text| serde_json::from_str(&text).ok())
}

/// A tenant row of `tenant_list.sql`, its budget as it stands now.
fn tenant(r: &Row<'_>) -> rusqlite::Result<TenantInfo> {
    Ok(TenantInfo {
        id: r.get(0)?,
        name: r.get(1)?,
        created_at: r.get(2)?,
        tokens: r.get::<_, i64>(3)? as u64,
        max_priority: r.get(4)?,
        shared_groups: json(r.get(5)?).unwrap_or_default(),
        modules: json(r.get(6)?),
        allow_http: json(r.get(7)?),
        max_running: r.get(8)?,
        running: r.get(9)?,
        max_limits: json(r.get(10)?).unwrap_or_default(),
        max_open: r.get(11)?,
        open: r.get::<_, i64>(12)? as u64,
        slot_micros: r.get::<_, i64>(13)? as u64,
        cpu_micros: r.get::<_, i64>(14)? as u64,
        memory_mib_seconds: r.get(15)?,
        weight: r.get(25)?,
        http_bytes: r.get::<_, i64>(26)? as u64,
        budget: None,
        budget_used: BudgetUsed::default(),
        held_until: None,
    }
    .with_budget(window(r, 16)?, r.get(24)?, now_micros()))
}

/// The budget's columns of a row from `first` on: `budget_period`, `cpu_budget`,
/// `memory_budget`, `http_budget`, `budget_window`, `budget_used`, `memory_used`,
/// `http_used`.
pub(super) fn window(r: &Row<'_>, first: usize) -> rusqlite::Result<Window> {
    let at = |i: usize| first + i;
    Ok(Window {
        budget: Budget::from_stored([r.get(at(0))?, r.get(at(1))?, r.get(at(2))?, r.get(at(3))?]),
        start: r.get(at(4))?,
        used: Spent {
            cpu_micros: r.get(at(5))?,
            memory_mib_ms: r.get(at(6))?,
            http_bytes: r.get(at(7))?,
        },
    })
}

fn token(r: &Row<'_>) -> rusqlite::Result<TokenInfo> {
    Ok(TokenInfo {
        id: r.get(0)?,
        tenant: r.get(1)?,
        created_at: r.get(2)?,
        revoked_at: r.get(3)?,
    })
}

pub(super) fn add(tx: &Transaction<'_>, name: String, now: Micros) -> StoreResult<TenantInfo> {
    check_tenant_name(&name)?;
    let added = tx
        .execute(
            "INSERT INTO tenants (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
            params![name, now],
        )
        .map_err(internal)?;
    if added == 0 {
        return Err(tenant_exists(&name));
    }
    get(tx, tx.last_insert_rowid())
}

/// Every tenant, or the one of id `only`.
pub(super) fn list(conn: &Connection, only: Option<TenantId>) -> StoreResult<Vec<TenantInfo>> {
    let mut stmt = conn
        .prepare_cached(include_str!("sql/tenant_list.sql"))
        .map_err(internal)?;
    let rows = stmt.query_map([only], tenant).map_err(internal)?;
    rows.collect::<Result<_, _>>().map_err(internal)
}

pub(super) fn get(conn: &Connection, id: TenantId) -> StoreResult<TenantInfo> {
    list(conn, Some(id))?
        .pop()
        .ok_or_else(|| no_tenant(&id.to_string()))
}

/// What a tenant's batches may do (its row alone).
pub(super) const RULES_SQL: &str = include_str!("sql/tenant_rules.sql");

/// What tenant `id`'s batches may do, its ceiling `server_max_priority` where it sets
/// none.
pub(super) fn rules(
    conn: &Connection,
    id: TenantId,
    server_max_priority: i32,
) -> StoreResult<TenantRules> {
    conn.prepare_cached(RULES_SQL)
        .map_err(internal)?
        .query_row([id], |r| {
            Ok(TenantRules {
                name: r.get(0)?,
                max_priority: r.get::<_, Option<i32>>(1)?.unwrap_or(server_max_priority),
                shared_groups: json(r.get(2)?).unwrap_or_default(),
                modules: json(r.get(3)?),
                allow_http: json(r.get(4)?),
                max_limits: json(r.get(5)?).unwrap_or_default(),
            })
        })
        .optional()
        .map_err(internal)?
        .ok_or_else(|| no_tenant(&id.to_string()))
}

/// Lowers to `ceiling` tenant `id`'s batches' priorities above it, and their tasks' not
/// started; returns how many tasks changed.
pub(super) fn lower_priorities(
    tx: &Transaction<'_>,
    id: TenantId,
    ceiling: i32,
) -> StoreResult<u64> {
    tx.execute(
        "UPDATE batches SET priority = ?1 WHERE tenant_id = ?2 AND priority > ?1",
        params![ceiling, id],
    )
    .map_err(internal)?;
    let changed = tx
        .execute(
            include_str!("sql/tenant_lower_tasks.sql"),
            params![ceiling, id],
        )
        .map_err(internal)?;
    Ok(changed as u64)
}

pub(super) fn set(
    tx: &Transaction<'_>,
    name: String,
    change: TenantChange,
    now: Micros,
) -> StoreResult<TenantInfo> {
    let id = tenant_id(tx, &name)?;
    if let Some(max_priority) = change.max_priority {
        tx.execute(
            "UPDATE tenants SET max_priority = ? WHERE id = ?",
            params![max_priority, id],
        )
        .map_err(internal)?;
    }
    if let Some(ceiling) = change.ceiling {
        lower_priorities(tx, id, ceiling)?;
    }
    if let Some(modules) = change.modules {
        let modules = modules
            .map(|m| check_modules(m).map(|m| serde_json::to_string(&m).expect("strings")))
            .transpose()?;
        tx.execute(
            "UPDATE tenants SET modules = ? WHERE id = ?",
            params![modules, id],
        )
        .map_err(internal)?;
    }
    if let Some(origins) = change.allow_http {
        let origins = origins.map(|o| serde_json::to_string(&o).expect("strings"));
        tx.execute(
            "UPDATE tenants SET allow_http = ? WHERE id = ?",
            params![origins, id],
        )
        .map_err(internal)?;
    }
    if let Some(max_running) = change.max_running {
        let max_running = check_max_running(max_running)?;
        tx.execute(
            "UPDATE tenants SET max_running = ? WHERE id = ?",
            params![max_running, id],
        )
        .map_err(internal)?;
    }
    if let Some(max_open) = change.max_open {
        let max_open = check_max_open(max_open)?;
        tx.execute(
            "UPDATE tenants SET max_open = ? WHERE id = ?",
            params![max_open, id],
        )
        .map_err(internal)?;
    }
    if let Some(maxima) = change.max_limits {
        let maxima = (maxima != TenantMaxima::default())
            .then(|| serde_json::to_string(&maxima).expect("maxima serialize"));
        tx.execute(
            "UPDATE tenants SET max_limits = ? WHERE id = ?",
            params![maxima, id],
        )
        .map_err(internal)?;
    }
    if let Some(budget) = change.budget {
        let [period, cpu, memory, http] = Budget::columns(budget);
        tx.execute(
            include_str!("sql/tenant_budget.sql"),
            params![period, cpu, memory, http, now, id],
        )
        .map_err(internal)?;
    }
    if let Some(weight) = change.weight {
        tx.execute(
            include_str!("sql/tenant_weight.sql"),
            params![fair::check_weight(weight)?, id],
        )
        .map_err(internal)?;
    }
    if let Some(groups) = change.shared_groups {
        let groups = serde_json::to_string(&check_shared_groups(groups)?).expect("strings");
        tx.execute(
            "UPDATE tenants SET shared_groups = ? WHERE id = ?",
            params![groups, id],
        )
        .map_err(internal)?;
    }
    get(tx, id)
}

/// Tenant `?`'s name and open limit.
pub(super) const LIMIT_SQL: &str = "SELECT name, max_open FROM tenants WHERE id = ?";
/// The open tasks of tenant `?`, summed over its open orders.
pub(super) const OPEN_SQL: &str = "SELECT coalesce(SUM(open), 0) FROM batch_orders \
    INDEXED BY batch_orders_tenant WHERE tenant_id = ?";

/// Refuses `adds` more open tasks of `tenant` past its open limit (see
/// [`crate::store::check_open`]); a batch of the admin's (`None`) has none.
pub(super) fn check_open(
    tx: &Transaction<'_>,
    tenant: Option<TenantId>,
    adds: u64,
) -> StoreResult<()> {
    let Some(tenant) = tenant else {
        return Ok(());
    };
    let limit: Option<(String, Option<u32>)> = tx
        .prepare_cached(LIMIT_SQL)
        .map_err(internal)?
        .query_row([tenant], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .map_err(internal)?;
    let Some((name, Some(max_open))) = limit else {
        return Ok(());
    };
    let open: i64 = tx
        .prepare_cached(OPEN_SQL)
        .map_err(internal)?
        .query_row([tenant], |r| r.get(0))
        .map_err(internal)?;
    crate::store::check_open(&name, max_open, open as u64, adds)
}

fn tenant_id(conn: &Connection, name: &str) -> StoreResult<TenantId> {
    conn.prepare_cached("SELECT id FROM tenants WHERE name = ?")
        .map_err(internal)?
        .query_row([name], |r| r.get(0))
        .optional()
        .map_err(internal)?
        .ok_or_else(|| no_tenant(name))
}

pub(super) fn token_add(
    tx: &Transaction<'_>,
    tenant: String,
    secret_hash: [u8; 32],
    now: Micros,
) -> StoreResult<TokenInfo> {
    let id = tenant_id(tx, &tenant)?;
    tx.execute(
        "INSERT INTO tenant_tokens (tenant_id, secret_hash, created_at) VALUES (?, ?, ?)",
        params![id, secret_hash, now],
    )
    .map_err(internal)?;
    Ok(TokenInfo {
        id: tx.last_insert_rowid(),
        tenant,
        created_at: now,
        revoked_at: None,
    })
}

pub(super) fn token_list(conn: &Connection, tenant: String) -> StoreResult<Vec<TokenInfo>> {
    tenant_id(conn, &tenant)?;
    let mut stmt = conn
        .prepare_cached(include_str!("sql/token_list.sql"))
        .map_err(internal)?;
    let rows = stmt.query_map([tenant], token).map_err(internal)?;
    rows.collect::<Result<_, _>>().map_err(internal)
}

pub(super) fn token_revoke(
    tx: &Transaction<'_>,
    tenant: String,
    token_id: i64,
    now: Micros,
) -> StoreResult<TokenInfo> {
    let id = tenant_id(tx, &tenant)?;
    tx.execute(
        "UPDATE tenant_tokens SET revoked_at = coalesce(revoked_at, ?)
         WHERE id = ? AND tenant_id = ?",
        params![now, token_id, id],
    )
    .map_err(internal)?;
    token_list(tx, tenant.clone())?
        .into_iter()
        .find(|t| t.id == token_id)
        .ok_or_else(|| no_token(&tenant, token_id))
}

pub(super) fn token_check(
    conn: &Connection,
    token_id: i64,
    secret_hash: [u8; 32],
) -> StoreResult<TenantId> {
    let found: Option<(TenantId, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT tenant_id, secret_hash FROM tenant_tokens
             WHERE id = ? AND revoked_at IS NULL",
        )
        .map_err(internal)?
        .query_row([token_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .map_err(internal)?;
    match found {
        Some((tenant, hash)) if hash == secret_hash => Ok(tenant),
        _ => Err(StoreError::NotFound {
            what: "token",
            id: token_id.to_string(),
        }),
    }
}
