//! `qhost bench fill`: a fresh store filled with many tasks (default a million) as a queue
//! looks after a day of work, most ended, some ready, claimed, paused or waiting at a gate,
//! across many batches and groups with limits; then the API served on it, and the reads an
//! operator makes timed, each several times: `/metrics`, `/v1/status`, first pages of the
//! log, and any `--path`. The fill is direct SQL (`sql/bench_fill_*.sql`), generated in
//! the database in one transaction.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use sha2::Digest as _;

use super::bench::{ECHO, fresh_store, is_postgres};
use crate::api::{self, AppState};
use crate::runtime::{Runtime, RuntimeConfig, TaskLimits};
use crate::scheduler::{Scheduler, SchedulerConfig};
use crate::store::now_micros;

#[derive(Debug, Args)]
pub struct FillArgs {
    /// Tasks to fill the store with, 1000 per batch.
    #[arg(long, default_value_t = 1_000_000)]
    pub tasks: usize,
    /// The database: `sqlite:PATH` of a file that does not exist yet (default: one in a
    /// temporary directory), or `postgres://USER@HOST/DB`, where a fresh schema is made
    /// for the run and dropped after it.
    #[arg(long)]
    pub db: Option<String>,
    /// Times each path is read.
    #[arg(long, default_value_t = 7)]
    pub repeat: usize,
    /// A further path to time, such as `/v1/tasks?state=ready` (repeatable).
    #[arg(long = "path", value_name = "PATH")]
    pub paths: Vec<String>,
    /// Keep the filled PostgreSQL schema and print the `--db` URL that serves it, instead
    /// of dropping it (a SQLite file given by `--db` is always kept).
    #[arg(long)]
    pub keep: bool,
}

/// What the reads are judged by: (path prefix, most milliseconds for the median).
const TARGETS: [(&str, f64); 3] = [
    ("/metrics", 20.0),
    ("/v1/status", 100.0),
    ("/v1/attempts", 50.0),
];

pub fn run(args: FillArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.tasks >= 1000, "--tasks must be at least 1000");
    anyhow::ensure!(args.repeat >= 1, "--repeat must be at least 1");
    for path in &args.paths {
        anyhow::ensure!(
            path.starts_with('/'),
            "--path {path:?}: give a path on the server, starting with `/`"
        );
    }
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    tokio.block_on(fill_and_time(args))?;
    Ok(ExitCode::SUCCESS)
}

async fn fill_and_time(args: FillArgs) -> anyhow::Result<()> {
    let temp = tempfile::tempdir().context("creating a temporary directory")?;
    let db = args
        .db
        .clone()
        .unwrap_or_else(|| format!("sqlite:{}", temp.path().join("bench.db").display()));
    let (url, fresh) = fresh_store(&db).await?;
    let result = run_on(&args, &url, &db, temp.path()).await;
    if args.keep && is_postgres(&db) {
        outln!("kept: --db {url}")?;
        return result;
    }
    fresh.remove().await?;
    result
}

async fn run_on(
    args: &FillArgs,
    url: &str,
    shown_db: &str,
    temp: &std::path::Path,
) -> anyhow::Result<()> {
    outln!(
        "qhost bench fill: {} tasks, {}",
        args.tasks,
        crate::store::postgres::redact(shown_db)
    )?;
    let now = now_micros();
    let started = Instant::now();
    let store = if is_postgres(url) {
        // The store migrates the schema; the fill writes beside it.
        let store = crate::store::open(url, "bench-1").await?;
        fill_postgres(url, args.tasks, now).await?;
        vacuum_postgres(url).await?;
        store
    } else {
        let path = url.strip_prefix("sqlite:").unwrap_or(url).to_owned();
        let tasks = args.tasks;
        tokio::task::spawn_blocking(move || fill_sqlite(&path, tasks, now)).await??;
        crate::store::open(url, "bench-1").await?
    };
    outln!(
        "filled {} tasks in {:.1} s",
        args.tasks,
        started.elapsed().as_secs_f64()
    )?;

    let mut runtime = RuntimeConfig::with_workers(2);
    runtime.cache_dir = Some(temp.join("artifacts"));
    let runtime = Arc::new(Runtime::new(runtime)?);
    let scheduler = Scheduler::new(store, runtime, SchedulerConfig::new("bench-1"));
    let token = "qha_bench_fill_admin_token";
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let state = AppState::new(scheduler, token);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(api::serve(
        listener,
        state,
        api::listen::Limits::default(),
        async move {
            let _ = stopped.await;
        },
    ));

    let hour_ago = now - 3_600_000_000;
    let mut paths = vec![
        "/metrics".to_owned(),
        "/v1/status".to_owned(),
        "/v1/attempts?limit=50".to_owned(),
        "/v1/attempts?limit=50&outcome=trap".to_owned(),
        format!("/v1/attempts?limit=50&since={hour_ago}"),
        format!("/v1/attempts?limit=50&since={hour_ago}&order=oldest"),
        format!("/v1/attempts?limit=50&until={}", now - 43_200_000_000),
    ];
    paths.extend(args.paths.iter().cloned());
    let base = format!("http://{address}");
    let repeat = args.repeat;
    let rows =
        tokio::task::spawn_blocking(move || time_paths(&base, token, &paths, repeat)).await??;
    let _ = stop.send(());
    server.await?;
    outln!(
        "{:<64}  {:>9}  {:>9}  {:>9}  TARGET",
        "PATH",
        "FIRST ms",
        "MEDIAN ms",
        "MAX ms"
    )?;
    for (path, first, median, max) in rows {
        let target = TARGETS
            .iter()
            .find(|(prefix, _)| path.starts_with(prefix))
            .map(|&(_, most)| {
                let verdict = if median <= most { "met" } else { "MISSED" };
                format!("<= {most} ms: {verdict}")
            })
            .unwrap_or_default();
        outln!("{path:<64}  {first:>9.2}  {median:>9.2}  {max:>9.2}  {target}")?;
    }
    Ok(())
}

/// Reads each path `repeat` times: the first read's, the median and the most
/// milliseconds.
fn time_paths(
    base: &str,
    token: &str,
    paths: &[String],
    repeat: usize,
) -> anyhow::Result<Vec<(String, f64, f64, f64)>> {
    let agent = ureq::Agent::new_with_defaults();
    let mut rows = Vec::new();
    for path in paths {
        let mut times = Vec::with_capacity(repeat);
        for _ in 0..repeat {
            let started = Instant::now();
            let mut response = agent
                .get(format!("{base}{path}"))
                .header("Authorization", format!("Bearer {token}"))
                .call()
                .with_context(|| format!("GET {path}"))?;
            response
                .body_mut()
                .with_config()
                .limit(1 << 30)
                .read_to_vec()
                .with_context(|| format!("reading GET {path}"))?;
            times.push(started.elapsed());
        }
        let first = ms(times[0]);
        times.sort();
        rows.push((
            path.clone(),
            first,
            ms(times[times.len() / 2]),
            ms(times[times.len() - 1]),
        ));
    }
    Ok(rows)
}

fn ms(took: Duration) -> f64 {
    took.as_secs_f64() * 1000.0
}

/// The `echo` module's row, so that the log names it.
fn module_row() -> (String, i64) {
    (hex::encode(sha2::Sha256::digest(ECHO)), ECHO.len() as i64)
}

/// Fills the SQLite store at `path` (made and migrated if new) with `tasks` tasks, as a
/// queue looks after a day of work (see `sql/bench_fill_sqlite.sql`).
pub fn fill_sqlite(path: &str, tasks: usize, now: i64) -> anyhow::Result<()> {
    let mut conn = crate::store::sqlite::SqliteStore::connect(std::path::Path::new(path))?;
    let limits = crate::store::limits::to_stored(&TaskLimits::default());
    let (digest, size) = module_row();
    let tx = conn.transaction()?;
    tx.execute(
        "INSERT INTO modules (digest, name, tag, size, bytes, added_at)
         VALUES (?1, 'echo', NULL, ?2, ?3, ?4)",
        rusqlite::params![digest, size, ECHO, now],
    )?;
    tx.execute(
        "INSERT INTO module_names (name, digest, named_at) VALUES ('echo', ?1, ?2)",
        rusqlite::params![digest, now],
    )?;
    tx.execute_batch(
        "CREATE TEMP TABLE fill_params (n INTEGER, module TEXT, limits TEXT, now INTEGER)",
    )?;
    tx.execute(
        "INSERT INTO temp.fill_params VALUES (?1, ?2, ?3, ?4)",
        rusqlite::params![tasks as i64, digest, limits, now],
    )?;
    tx.execute_batch(include_str!("sql/bench_fill_sqlite.sql"))
        .context("filling the SQLite store")?;
    tx.execute_batch("DROP TABLE temp.fill_params")?;
    tx.commit()?;
    Ok(())
}

/// Fills the PostgreSQL store at `url` (migrated already) with `tasks` tasks, as
/// [`fill_sqlite`] does, without vacuuming it: see [`vacuum_postgres`].
pub async fn fill_postgres(url: &str, tasks: usize, now: i64) -> anyhow::Result<()> {
    let (mut client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .with_context(|| format!("connecting to {}", crate::store::postgres::redact(url)))?;
    let driver = tokio::spawn(connection);
    let limits = crate::store::limits::to_stored(&TaskLimits::default());
    let (digest, size) = module_row();
    let tx = client.transaction().await?;
    tx.execute(
        "INSERT INTO modules (digest, name, tag, size, bytes, added_at)
         VALUES ($1, 'echo', NULL, $2, $3, $4)",
        &[&digest, &size, &ECHO, &now],
    )
    .await?;
    tx.execute(
        "INSERT INTO module_names (name, digest, named_at) VALUES ('echo', $1, $2)",
        &[&digest, &now],
    )
    .await?;
    tx.batch_execute(
        "CREATE TEMP TABLE fill_params (n BIGINT, module TEXT, limits TEXT, now BIGINT)
         ON COMMIT DROP",
    )
    .await?;
    tx.execute(
        "INSERT INTO fill_params VALUES ($1, $2, $3, $4)",
        &[&(tasks as i64), &digest, &limits, &now],
    )
    .await?;
    tx.batch_execute(include_str!("sql/bench_fill_postgres.sql"))
        .await
        .context("filling the PostgreSQL store")?;
    tx.commit().await?;
    drop(client);
    let _ = driver.await;
    Ok(())
}

/// Vacuums and analyzes a filled PostgreSQL store, as autovacuum would have by now in a
/// store that filled over a day: index-only scans read the visibility map instead of
/// every row's page, and plans see the rows.
pub async fn vacuum_postgres(url: &str) -> anyhow::Result<()> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .with_context(|| format!("connecting to {}", crate::store::postgres::redact(url)))?;
    let driver = tokio::spawn(connection);
    client
        .batch_execute(
            "VACUUM (ANALYZE) tasks, attempts, ready, leases, dead_letters, batches,
                 batch_orders, groups",
        )
        .await
        .context("vacuuming the filled PostgreSQL store")?;
    drop(client);
    let _ = driver.await;
    Ok(())
}
