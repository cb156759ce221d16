//! `qhost bench`: fills a fresh store with no-op (`echo`) tasks, or tasks that sleep,
//! drains it with one node (or several on PostgreSQL), and reports throughput and latency,
//! so users can measure their own hardware.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand};
use tracing::Instrument as _;

use crate::runtime::{Runtime, RuntimeConfig};
use crate::scheduler::node::Node;
use crate::scheduler::{Access, Scheduler, SchedulerConfig};
use crate::store::{AttemptFilter, AttemptRecord, BatchSpec, Dep, Store, TaskSpec};

/// The `echo` guest, built from guest-examples/echo.
pub(super) const ECHO: &[u8] = include_bytes!("../../assets/echo.wasm");
/// The `sleep` guest, built from guest-examples/sleep.
const SLEEP: &[u8] = include_bytes!("../../assets/sleep.wasm");

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: Option<BenchCommand>,
    /// Tasks to queue and drain.
    #[arg(long, default_value_t = 100_000)]
    pub tasks: usize,
    /// Instance slots.
    #[arg(long, default_value_t = 2)]
    pub workers: usize,
    /// Spread the tasks over this many groups of limit 1 (0: no groups).
    #[arg(long, default_value_t = 0)]
    pub groups: usize,
    /// Spread the tasks over this many batches.
    #[arg(long, default_value_t = 1)]
    pub batches: usize,
    /// Give the batches, in turn, to this many tenants of equal weight, who share the
    /// slots (0: the admin's).
    #[arg(long, default_value_t = 0)]
    pub tenants: usize,
    /// Orders per batch: each batch's tasks in this many consecutive orders.
    #[arg(long, default_value_t = 1)]
    pub orders: usize,
    /// Lay each batch's tasks out as a graph: diamonds one after another, each this many
    /// tasks wide, after the join of the one before, and a join after them (0: no edges).
    #[arg(long, default_value_t = 0)]
    pub graph: usize,
    /// At most this many tasks claimed ahead of free slots (default: as `qhost serve`).
    #[arg(long)]
    pub prefetch: Option<usize>,
    /// The database: `sqlite:PATH` of a file that does not exist yet (default: one in a
    /// temporary directory), or `postgres://USER@HOST/DB`, where a fresh schema is made
    /// for the run and dropped after it.
    #[arg(long)]
    pub db: Option<String>,
    /// Nodes draining the queue at once, each with its own slots (PostgreSQL only).
    #[arg(long, default_value_t = 1)]
    pub nodes: usize,
    /// Each task sleeps this many milliseconds instead of returning at once: how well
    /// the slots of every node are kept busy with work longer than a claim.
    #[arg(long, default_value_t = 0)]
    pub task_ms: u64,
    /// Send traces over OTLP/HTTP to this collector (a base URL, as `qhost serve` takes
    /// it; or the standard OTEL_EXPORTER_OTLP_ENDPOINT): what tracing costs the drain.
    #[arg(long)]
    pub otlp_endpoint: Option<String>,
    /// A rate on the groups (`5/s`, `100/m`): reports how many of each group's tasks
    /// started per 10 s window, and how soon the others were done.
    #[arg(long, requires = "groups")]
    pub rate: Option<String>,
    /// Only the first this many groups get `--rate` (default: all).
    #[arg(long, requires = "rate")]
    pub rated_groups: Option<usize>,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Fill a fresh store with many tasks, as a queue looks after a day of work, serve it,
    /// and time the reads an operator makes: metrics, status, pages of the log.
    Fill(super::bench_fill::FillArgs),
}

pub fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    if let Some(BenchCommand::Fill(fill)) = args.command {
        return super::bench_fill::run(fill);
    }
    anyhow::ensure!(args.tasks >= 1, "--tasks must be at least 1");
    anyhow::ensure!(
        args.batches >= 1 && args.orders >= 1,
        "--batches and --orders must be at least 1"
    );
    // No log: only the spans, when asked for.
    let telemetry = if crate::telemetry::traces_asked(args.otlp_endpoint.as_deref()) {
        Some(crate::telemetry::init(crate::telemetry::Settings {
            log: None,
            otlp_endpoint: args.otlp_endpoint.clone(),
            node: "bench-1".into(),
        })?)
    } else {
        None
    };
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    tokio.block_on(bench(args))?;
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    Ok(ExitCode::SUCCESS)
}

/// Where the run keeps its store, removed when it ends.
pub(super) enum Fresh {
    Sqlite,
    Postgres { url: String, schema: String },
}

async fn bench(args: BenchArgs) -> anyhow::Result<()> {
    let temp = tempfile::tempdir().context("creating a temporary directory")?;
    let db = args
        .db
        .clone()
        .unwrap_or_else(|| format!("sqlite:{}", temp.path().join("bench.db").display()));
    let postgres = is_postgres(&db);
    anyhow::ensure!(
        args.nodes >= 1 && (postgres || args.nodes == 1),
        "--nodes {}: several nodes need a postgres:// database",
        args.nodes
    );
    let rated = match &args.rate {
        Some(rate) => Some(super::bench_rate::Rated::new(
            rate,
            args.groups,
            args.rated_groups,
        )?),
        None => None,
    };
    let (url, fresh) = fresh_store(&db).await?;
    let result = drain(&args, &url, &db, temp.path(), rated.as_ref()).await;
    fresh.remove().await?;
    result
}

pub(super) fn is_postgres(db: &str) -> bool {
    db.starts_with("postgres://") || db.starts_with("postgresql://")
}

/// A fresh store at `db` (`sqlite:PATH` of a file that does not exist yet, or a
/// `postgres://` URL, where a schema is made for the run): its URL, and what to remove
/// after the run.
pub(super) async fn fresh_store(db: &str) -> anyhow::Result<(String, Fresh)> {
    if is_postgres(db) {
        let schema = format!("qhost_bench_{}", std::process::id());
        let url = crate::store::postgres::create_schema(db, &schema).await?;
        Ok((
            url,
            Fresh::Postgres {
                url: db.to_owned(),
                schema,
            },
        ))
    } else {
        let path = db.strip_prefix("sqlite:").unwrap_or(db);
        anyhow::ensure!(
            !std::path::Path::new(path).exists(),
            "{path} exists: bench needs a fresh database"
        );
        Ok((db.to_owned(), Fresh::Sqlite))
    }
}

impl Fresh {
    /// Removes what the run made: a PostgreSQL schema (a SQLite file goes with its
    /// temporary directory, or stays where it was asked for).
    pub(super) async fn remove(self) -> anyhow::Result<()> {
        if let Fresh::Postgres { url, schema } = self {
            crate::store::postgres::drop_schema(&url, &schema).await?;
        }
        Ok(())
    }
}

async fn drain(
    args: &BenchArgs,
    url: &str,
    shown_db: &str,
    temp: &std::path::Path,
    rated: Option<&super::bench_rate::Rated>,
) -> anyhow::Result<()> {
    let mut schedulers = Vec::new();
    for n in 1..=args.nodes {
        let name = format!("bench-{n}");
        let store = crate::store::open(url, &name).await?;
        let mut runtime = RuntimeConfig::with_workers(args.workers);
        runtime.cache_dir = Some(temp.join("artifacts"));
        let runtime = Arc::new(Runtime::new(runtime)?);
        let mut config = SchedulerConfig::new(name);
        if let Some(prefetch) = args.prefetch {
            config.prefetch = prefetch;
        }
        schedulers.push(Scheduler::new(store, runtime, config));
    }
    let scheduler = schedulers[0].clone();
    let store = scheduler.store.clone();
    let (guest, name, input) = match args.task_ms {
        0 => (ECHO, "echo", b"bench".to_vec()),
        ms => (SLEEP, "sleep", ms.to_string().into_bytes()),
    };
    let module = scheduler
        .module_add(guest.to_vec(), Some(name.into()), None)
        .await?
        .digest;

    let graph = match args.graph {
        0 => String::new(),
        width => format!(", diamonds {width} wide"),
    };
    outln!(
        "qhost bench: {} {name} tasks, {} node(s) of {} worker(s), {} batch(es), {} order(s) per batch, {} group(s){graph}, {}",
        args.tasks,
        args.nodes,
        args.workers,
        args.batches,
        args.orders,
        args.groups,
        crate::store::postgres::redact(shown_db)
    )?;
    if let Some(rated) = rated {
        rated.set(&scheduler).await?;
        outln!(
            "{} of the groups claim at most {} tasks per {}",
            rated.groups.len(),
            rated.rate.limit,
            humantime::format_duration(rated.rate.period)
        )?;
    }
    let mut tenants = Vec::with_capacity(args.tenants);
    for n in 0..args.tenants {
        tenants.push(scheduler.tenant_add(format!("bench-{n}")).await?.id);
    }
    if !tenants.is_empty() {
        outln!("the batches belong to {} tenants in turn", tenants.len())?;
    }
    let submit_started = Instant::now();
    let mut batches = Vec::new();
    let per_batch = args.tasks.div_ceil(args.batches);
    let mut next = 0usize;
    for index in 0..args.batches {
        let spec = BatchSpec {
            tenant: (!tenants.is_empty()).then(|| tenants[index % tenants.len()]),
            ..BatchSpec::default()
        };
        let (info, _) = scheduler.batch_open(spec).await?;
        let count = per_batch.min(args.tasks - next);
        let tasks: Vec<TaskSpec> = (0..count)
            .map(|i| {
                let spec = TaskSpec {
                    order: (i * args.orders / count.max(1)) as i64,
                    group: (args.groups > 0).then(|| format!("g{}", (next + i) % args.groups)),
                    ..TaskSpec::new(module, input.clone())
                };
                diamond(spec, i, args.graph)
            })
            .collect();
        next += count;
        for chunk in tasks.chunks(10_000) {
            // As a request to the API would be: a span the tasks' attempts join.
            let span = if crate::telemetry::on() {
                tracing::info_span!(target: crate::telemetry::TARGET, "submit")
            } else {
                tracing::Span::none()
            };
            scheduler
                .submit(&Access::Admin, info.id, chunk.to_vec())
                .instrument(span)
                .await?;
        }
        batches.push(info.id);
    }
    let submit_time = submit_started.elapsed();
    outln!(
        "submitted {} tasks in {:.2} s: {:.0} tasks/s",
        args.tasks,
        submit_time.as_secs_f64(),
        args.tasks as f64 / submit_time.as_secs_f64()
    )?;

    let drain_started = Instant::now();
    let drain_began = crate::store::now_micros();
    let mut nodes = Vec::new();
    for scheduler in &schedulers {
        nodes.push(Node::start(scheduler.clone()).await?);
    }
    for &batch in &batches {
        let info = scheduler
            .batch_wait(batch, Duration::from_secs(24 * 3600))
            .await?;
        anyhow::ensure!(
            info.progress.succeeded == info.progress.total(),
            "batch {batch} ended with {:?}",
            info.progress
        );
    }
    let drain_time = drain_started.elapsed();
    for node in nodes {
        node.stop(Duration::from_secs(10)).await?;
    }
    let rate = args.tasks as f64 / drain_time.as_secs_f64();
    outln!(
        "drained {} tasks in {:.2} s: {rate:.0} tasks/s",
        args.tasks,
        drain_time.as_secs_f64(),
    )?;
    let runs = run_times(&*store).await?;
    if let (Some(p50), Some(p99)) = (percentile(&runs, 50), percentile(&runs, 99)) {
        outln!("attempt run time: p50 {p50} µs, p99 {p99} µs")?;
    }
    if !tenants.is_empty() {
        let held: Vec<String> = scheduler
            .tenant_list()
            .await?
            .iter()
            .map(|t| format!("{} {:.2} s", t.name, t.slot_micros as f64 / 1e6))
            .collect();
        outln!("slot time by tenant: {}", held.join(", "))?;
    }
    if let Some(rated) = rated {
        rated.report(&*store, drain_began).await?;
    }
    if args.task_ms > 0 {
        // The share of the slots' time spent running attempts, however long each ran.
        let slots = (args.nodes * args.workers) as f64;
        let ran: i64 = runs.iter().sum();
        let busy = ran as f64 / (slots * drain_time.as_micros() as f64);
        // Tasks of exactly `task_ms`, with no gap between them.
        let ideal = slots * 1000.0 / args.task_ms as f64;
        outln!(
            "the slots were kept {:.1}% busy; {:.1}% of {ideal:.0} tasks/s, the rate if every \
             attempt took exactly {} ms with no gap between them",
            100.0 * busy,
            100.0 * rate / ideal,
            args.task_ms
        )?;
    }
    Ok(())
}

/// Task `i` of a batch laid out as diamonds `width` wide (none: `spec` as it is): the
/// sides of diamond `d` run after the join of diamond `d - 1`, its join after its sides.
fn diamond(mut spec: TaskSpec, i: usize, width: usize) -> TaskSpec {
    if width == 0 {
        return spec;
    }
    let (d, at) = (i / (width + 1), i % (width + 1));
    if at == width {
        spec.key = Some(format!("j{d}"));
        spec.after = (0..width).map(|w| Dep::key(format!("s{d}-{w}"))).collect();
    } else {
        spec.key = Some(format!("s{d}-{at}"));
        if d > 0 {
            spec.after = vec![Dep::key(format!("j{}", d - 1))];
        }
    }
    spec
}

/// How long each attempt ran, in microseconds, from the execution log; shortest first.
async fn run_times(store: &dyn Store) -> anyhow::Result<Vec<i64>> {
    let mut runs = Vec::new();
    each_attempt(store, |a| runs.push(a.ended_at - a.started_at)).await?;
    runs.sort_unstable();
    Ok(runs)
}

/// Calls `each` with every attempt of the execution log, oldest first, read a page at a
/// time.
pub(super) async fn each_attempt(
    store: &dyn Store,
    mut each: impl FnMut(AttemptRecord),
) -> anyhow::Result<()> {
    let mut after = None;
    loop {
        let page = store
            .attempt_list(AttemptFilter {
                after,
                limit: Some(10_000),
                ..Default::default()
            })
            .await?;
        let Some(&(last, _)) = page.last() else {
            return Ok(());
        };
        after = Some(last);
        page.into_iter().for_each(|(_, a)| each(a));
    }
}

/// The `p`th percentile of sorted `values`.
fn percentile(values: &[i64], p: usize) -> Option<i64> {
    let last = values.len().checked_sub(1)?;
    Some(values[last * p / 100])
}
