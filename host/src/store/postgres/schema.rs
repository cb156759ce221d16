//! The database itself: connection pools, schema migrations, the clock offset, and the
//! schemas `qhost bench` and tests create and drop.

use std::time::Duration;

use anyhow::Context;
use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::NoTls;

use crate::store::{Micros, errors, now_micros};

/// The migrations in order. A database records only how many it has applied (the
/// `qhost_schema` table), so these files never change once released: a change is a new one.
const MIGRATIONS: [&str; 33] = [
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_claim_indexes.sql"),
    include_str!("migrations/0003_queue_tables.sql"),
    include_str!("migrations/0004_start_marks.sql"),
    include_str!("migrations/0005_redrive_pause_keys.sql"),
    include_str!("migrations/0006_schedules.sql"),
    include_str!("migrations/0007_lists.sql"),
    include_str!("migrations/0008_counters.sql"),
    include_str!("migrations/0009_grants.sql"),
    include_str!("migrations/0010_module_producers.sql"),
    include_str!("migrations/0011_list_reads.sql"),
    include_str!("migrations/0012_dead_letters.sql"),
    include_str!("migrations/0013_module_names.sql"),
    include_str!("migrations/0014_batch_quotas.sql"),
    include_str!("migrations/0015_webhooks.sql"),
    include_str!("migrations/0016_trace_parent.sql"),
    include_str!("migrations/0017_repeated_errors.sql"),
    include_str!("migrations/0018_group_rates.sql"),
    include_str!("migrations/0019_task_edges.sql"),
    include_str!("migrations/0020_deferrals.sql"),
    include_str!("migrations/0021_spawn.sql"),
    include_str!("migrations/0022_spawn_quotas.sql"),
    include_str!("migrations/0023_tenants.sql"),
    include_str!("migrations/0024_tenant_limits.sql"),
    include_str!("migrations/0025_tenant_usage.sql"),
    include_str!("migrations/0026_cpu_time.sql"),
    include_str!("migrations/0027_memory_time.sql"),
    include_str!("migrations/0028_cpu_budgets.sql"),
    include_str!("migrations/0029_fair_share.sql"),
    include_str!("migrations/0030_budget_meters.sql"),
    include_str!("migrations/0031_task_cost.sql"),
    include_str!("migrations/0032_batch_costly.sql"),
    include_str!("migrations/0033_attempts_key_with_start.sql"),
];

/// Advisory lock class of schema migrations (one node migrates, the others wait).
pub const MIGRATION_LOCK: i64 = 0x7168_6f73_7400_0001;
/// Clock offsets below this are treated as none: times stay exactly as given.
const CLOCK_TOLERANCE: Micros = 100_000;

/// Creates the schema `name` in the database at `url` and returns a URL that selects
/// it: a fresh, empty store (for `qhost bench` and tests).
pub async fn create_schema(url: &str, name: &str) -> anyhow::Result<String> {
    anyhow::ensure!(
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
        "schema name {name:?}: use letters, digits and underscores"
    );
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .with_context(|| format!("connecting to {}", redact(url)))?;
    let driver = tokio::spawn(connection);
    // A name cannot be a parameter; it was checked above.
    client
        .batch_execute(&format!("CREATE SCHEMA {name}"))
        .await
        .with_context(|| format!("creating the schema {name}"))?;
    drop(client);
    let _ = driver.await;
    let separator = if url.contains('?') { '&' } else { '?' };
    Ok(format!("{url}{separator}options=-csearch_path%3D{name}"))
}

/// Drops the schema `name` and everything in it.
pub async fn drop_schema(url: &str, name: &str) -> anyhow::Result<()> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .with_context(|| format!("connecting to {}", redact(url)))?;
    let driver = tokio::spawn(connection);
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE"))
        .await
        .with_context(|| format!("dropping the schema {name}"))?;
    drop(client);
    let _ = driver.await;
    Ok(())
}

pub(super) fn pool(config: tokio_postgres::Config, size: usize) -> anyhow::Result<Pool> {
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(size)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .create_timeout(Some(Duration::from_secs(10)))
        .wait_timeout(Some(Duration::from_secs(60)))
        .build()
        .context("creating the connection pool")
}

/// The URL with its passwords, if any, replaced by `***`, for messages and logs: the
/// user's in the authority (an `@` in the path or query is not a user's), and a
/// `password=` parameter in the query string, which libpq and tokio-postgres read too.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (base, query) = match rest.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (rest, None),
    };
    let authority_end = base.find('/').unwrap_or(base.len());
    let mut shown = match base[..authority_end].rfind('@') {
        Some(at) => match base[..at].split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***{}", &base[at..]),
            None => format!("{scheme}://{base}"),
        },
        None => format!("{scheme}://{base}"),
    };
    if let Some(query) = query {
        let params: Vec<&str> = query
            .split('&')
            .map(|param| match param.split_once('=') {
                Some(("password", _)) => "password=***",
                _ => param,
            })
            .collect();
        shown.push('?');
        shown.push_str(&params.join("&"));
    }
    shown
}

/// Applies the migrations this database lacks. Nodes starting at once take turns on an
/// advisory lock, so each migration runs exactly once.
pub(super) async fn migrate(client: &mut deadpool_postgres::Object) -> anyhow::Result<()> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS qhost_schema (version INT NOT NULL)")
        .await?;
    let version: i32 = tx
        .query_opt("SELECT version FROM qhost_schema", &[])
        .await?
        .map(|r| r.get(0))
        .unwrap_or(0);
    if version as usize > MIGRATIONS.len() {
        return Err(errors::newer_schema(version as usize, MIGRATIONS.len()));
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.batch_execute(sql)
            .await
            .with_context(|| format!("applying migration {}", index + 1))?;
    }
    tx.execute("DELETE FROM qhost_schema", &[]).await?;
    tx.execute(
        "INSERT INTO qhost_schema (version) VALUES ($1)",
        &[&(MIGRATIONS.len() as i32)],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The database's clock minus this node's, from the midpoint of one round trip; zero when
/// within [`CLOCK_TOLERANCE`].
pub(super) async fn measure_clock_offset(client: &impl GenericClient) -> anyhow::Result<Micros> {
    let before = now_micros();
    let db: i64 = client
        .query_one(
            "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint",
            &[],
        )
        .await?
        .get(0);
    let after = now_micros();
    let offset = db - (before + after) / 2;
    Ok(if offset.abs() < CLOCK_TOLERANCE {
        0
    } else {
        offset
    })
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn a_url_shown_has_no_password() {
        assert_eq!(
            redact("postgres://qhost:s3cret@db:5432/qhost?sslmode=disable"),
            "postgres://qhost:***@db:5432/qhost?sslmode=disable"
        );
        assert_eq!(
            redact("postgres://qhost@db/qhost"),
            "postgres://qhost@db/qhost"
        );
        assert_eq!(
            redact("sqlite:qhost-data/qhost.db"),
            "sqlite:qhost-data/qhost.db"
        );
    }

    #[test]
    fn a_password_in_the_query_string_is_hidden_too() {
        assert_eq!(
            redact("postgres://qhost@db/qhost?sslmode=disable&password=s3cret"),
            "postgres://qhost@db/qhost?sslmode=disable&password=***"
        );
        assert_eq!(
            redact("postgresql://a:b@db?password=s3cret&user=x@y"),
            "postgresql://a:***@db?password=***&user=x@y"
        );
        assert_eq!(
            redact("postgres://db/qhost?passwordless=yes"),
            "postgres://db/qhost?passwordless=yes"
        );
    }
}
