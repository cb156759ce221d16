//! `qhost serve`: runs a node with the HTTP API, on the embedded SQLite store by default.
//!
//! Settings come from flags, `QHOST_*` environment variables, or a TOML file (`--config`),
//! in that order of precedence. The admin token is `QHOST_ADMIN_TOKEN` or, when unset, one
//! generated on first start and kept in the data directory.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use serde::Deserialize;

use super::serve_quotas::QuotaArgs;
use crate::api::{self, AppState};
use crate::runtime::limits::KIB;
use crate::runtime::{
    AllowedOrigin, Mount, Runtime, RuntimeConfig, TaskLimits, create_private_dir,
};
use crate::scheduler::node::Node;
use crate::scheduler::{Scheduler, SchedulerConfig};
use crate::secrets::SecretKey;
use crate::units::{parse_bytes, parse_duration};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on, HOST:PORT; host names resolve (default 127.0.0.1:7700).
    #[arg(long, env = "QHOST_LISTEN")]
    pub listen: Option<String>,
    /// Where the database, the admin token and compiled components are kept (default
    /// ./qhost-data).
    #[arg(long, env = "QHOST_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// The database: `sqlite:PATH` (default: qhost.db in the data directory) or
    /// `postgres://USER@HOST/DB`, shared by several nodes.
    #[arg(long, env = "QHOST_DB", hide_env_values = true)]
    pub db: Option<String>,
    /// This node's name in leases and the execution log; unique among the nodes sharing
    /// a database (default: the host name).
    #[arg(long, env = "QHOST_NODE")]
    pub node: Option<String>,
    /// Instance slots: tasks that run at once (default: the number of CPUs).
    #[arg(long, env = "QHOST_WORKERS")]
    pub workers: Option<usize>,
    /// The admin bearer token (default: generated on first start and kept in the
    /// `admin-token` file of the data directory, where the client finds it).
    #[arg(long, env = "QHOST_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// How long running tasks may finish after SIGINT/SIGTERM before they are handed back
    /// (default 30s).
    #[arg(long, env = "QHOST_GRACE")]
    pub grace: Option<String>,
    /// How long a claimed task stays this node's without a renewal: after a crash, its
    /// tasks run again elsewhere this long after (default 30s).
    #[arg(long, env = "QHOST_LEASE")]
    pub lease: Option<String>,
    /// How long ended tasks, their attempts and outputs are kept before they are deleted:
    /// a duration (`7d`, `12h`), or `off` (or `0`) to keep them for ever (default 7d).
    #[arg(long, env = "QHOST_RETENTION")]
    pub retention: Option<String>,
    /// A directory tasks may be given, seen as /NAME: NAME=DIR[:ro|:rw]. Repeatable
    /// (default: none; read-only unless `:rw`).
    #[arg(long = "mount", value_name = "NAME=DIR[:ro|:rw]")]
    pub mounts: Vec<Mount>,
    /// An origin tasks may reach over HTTP when their batch is granted it too:
    /// SCHEME://HOST[:PORT|:*]. Repeatable; in QHOST_ALLOW_HTTP, comma-separated. A name
    /// reaches only public addresses; a private or loopback one must be named as an IP
    /// address (default: none, no outbound HTTP).
    #[arg(
        long = "allow-http",
        env = "QHOST_ALLOW_HTTP",
        value_name = "ORIGIN",
        value_delimiter = ','
    )]
    pub allow_http: Vec<AllowedOrigin>,
    /// A file holding the key (64 hex digits) that seals the secret settings granted to
    /// batches; QHOST_SECRET_KEY gives the key itself. Every node sharing a database needs
    /// the same one (default: the `secret-key` file of the data directory, created on
    /// first start).
    #[arg(long, env = "QHOST_SECRET_KEY_FILE")]
    pub secret_key_file: Option<PathBuf>,
    /// HTTP connections open at once; past it a few more are let in for the admin and
    /// `/healthz`, and the others answered 503 and closed (default: 10000, or half the
    /// open-file limit if that is less).
    #[arg(long, env = "QHOST_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// HTTP connections open at once from one address; more are answered 503 and closed
    /// (default: a quarter of `max_connections`; raise it when clients come through a
    /// proxy).
    #[arg(long, env = "QHOST_MAX_CONNECTIONS_PER_ADDRESS")]
    pub max_connections_per_address: Option<usize>,
    /// How long a client may take to send a request's headers, from the connection's
    /// opening or its previous answer (so also how long a connection may idle) (default 5s).
    #[arg(long, env = "QHOST_HEADER_TIMEOUT")]
    pub header_timeout: Option<String>,
    /// How long a client may pause while sending a body or reading a response, and how
    /// long a body has before its average rate counts (default 30s).
    #[arg(long, env = "QHOST_CLIENT_TIMEOUT")]
    pub client_timeout: Option<String>,
    /// The longest run a task may ask for (`timeout`); tasks and schedules' plans asking
    /// more are refused (default 24h; a task that asks none gets 30s, or this if less).
    #[arg(long, env = "QHOST_MAX_TIMEOUT")]
    pub max_timeout: Option<String>,
    /// The most memory a task may ask for (`memory`); tasks and schedules' plans asking
    /// more are refused (default 4GiB; a task that asks none gets 64MiB, or this if less).
    #[arg(long, env = "QHOST_MAX_MEMORY")]
    pub max_memory: Option<String>,
    /// The longest a task may ask to wait through `retry-after` (back-pressure from its
    /// upstream), and so hold its group; a longer ask gets this (default 1h).
    #[arg(long, env = "QHOST_MAX_DEFER")]
    pub max_defer: Option<String>,
    /// How many times one task may be deferred through `retry-after` without using an
    /// attempt; the attempt that asks once more counts as a failure (default 20).
    #[arg(long, env = "QHOST_MAX_DEFERRALS")]
    pub max_deferrals: Option<u32>,
    /// The lowest average rate, per second, at which a request body must arrive once
    /// `client_timeout` has passed (default 64KiB).
    #[arg(long, env = "QHOST_MIN_BODY_RATE")]
    pub min_body_rate: Option<String>,
    /// Waits and event streams that one batch handle may hold open at once (default 16).
    #[arg(long, env = "QHOST_MAX_LONG_REQUESTS_PER_HANDLE")]
    pub max_long_requests_per_handle: Option<usize>,
    /// Waits and event streams that batch handles together may hold open at once
    /// (default: a quarter of `max_connections`).
    #[arg(long, env = "QHOST_MAX_LONG_REQUESTS")]
    pub max_long_requests: Option<usize>,
    /// A token that opens `/metrics` (besides the admin token) (default: none).
    #[arg(long, env = "QHOST_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,
    /// A second address, HOST:PORT, that serves `/metrics` alone and to anyone: for a
    /// scraper on a network clients do not reach (default: none).
    #[arg(long, env = "QHOST_METRICS_LISTEN")]
    pub metrics_listen: Option<String>,
    /// A URL every batch's end and every task's final failure is posted to, signed with
    /// the secret in `webhook_secret_file`; its origin must be in `allow_http` (default:
    /// none).
    #[arg(long, env = "QHOST_WEBHOOK", value_name = "URL")]
    pub webhook: Option<String>,
    /// A file holding the secret (16 to 1024 bytes) that signs the requests to `webhook`;
    /// QHOST_WEBHOOK_SECRET gives the secret itself (default: none; needed with `webhook`).
    #[arg(long, env = "QHOST_WEBHOOK_SECRET_FILE")]
    pub webhook_secret_file: Option<PathBuf>,
    /// A TOML file with any of the settings above (keys: listen, data_dir, db, node,
    /// workers, admin_token, grace, lease, retention, mounts, allow_http, secret_key_file,
    /// max_connections, max_connections_per_address, header_timeout, client_timeout,
    /// min_body_rate, max_long_requests_per_handle, max_long_requests, metrics_token,
    /// metrics_listen, max_timeout, max_memory, max_defer, max_deferrals, quota_tasks,
    /// quota_input, quota_output, quota_text, quota_children, quota_depth, webhook,
    /// webhook_secret_file, otlp_endpoint, tenant_max_priority, tenant_max_running,
    /// tenant_max_open, tenant_budget, tenant_weight);
    /// flags and variables take precedence (default: none).
    #[arg(long, env = "QHOST_CONFIG")]
    pub config: Option<PathBuf>,
    /// Log as JSON lines instead of readable text.
    #[arg(long)]
    pub log_json: bool,
    /// Send traces over OTLP/HTTP to this collector, a base URL such as
    /// http://localhost:4318 (`/v1/traces` is added); the standard
    /// OTEL_EXPORTER_OTLP_ENDPOINT does the same (default: none, no traces).
    #[arg(long, env = "QHOST_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,
    /// The highest priority a tenant's batches and tasks may be given, by its token or
    /// their handles, unless the admin gives the tenant another (default 100).
    #[arg(long, env = "QHOST_TENANT_MAX_PRIORITY", allow_negative_numbers = true)]
    pub tenant_max_priority: Option<i32>,
    /// The most tasks of a tenant claimed at once, across its batches and the nodes,
    /// that a tenant gets when it is added (1 to 1000000; default: no limit). The admin
    /// changes a tenant's with `qhost tenant set NAME --max-running N`.
    #[arg(long, env = "QHOST_TENANT_MAX_RUNNING", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub tenant_max_running: Option<u32>,
    /// The most tasks of a tenant open at once (submitted, not ended), across its
    /// batches, that a tenant gets when it is added (1 to 1000000000; default: no
    /// limit). The admin changes a tenant's with `qhost tenant set NAME --max-open N`.
    #[arg(long, env = "QHOST_TENANT_MAX_OPEN", value_parser = clap::value_parser!(u32).range(1..=1_000_000_000))]
    pub tenant_max_open: Option<u32>,
    /// The budget a tenant gets when it is added, as `METERS/PERIOD`
    /// (`cpu=10s,memory=1GiB*1m,http=100MB/1h`, or `10s/1h` for CPU alone; default: none).
    /// The admin changes a tenant's with `qhost tenant set NAME --budget`.
    #[arg(long, env = "QHOST_TENANT_BUDGET", value_name = "METERS/PERIOD")]
    pub tenant_budget: Option<String>,
    /// The weight a tenant gets when it is added: its share of the slots under
    /// saturation, against the other tenants' (1 to 10000; default 1). The admin changes
    /// a tenant's with `qhost tenant set NAME --weight N`.
    #[arg(long, env = "QHOST_TENANT_WEIGHT", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub tenant_weight: Option<u32>,
    #[command(flatten)]
    pub quotas: QuotaArgs,
}

/// The TOML file's settings.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<String>,
    data_dir: Option<PathBuf>,
    db: Option<String>,
    node: Option<String>,
    workers: Option<usize>,
    admin_token: Option<String>,
    grace: Option<String>,
    lease: Option<String>,
    retention: Option<String>,
    #[serde(default)]
    mounts: Vec<String>,
    allow_http: Option<Vec<String>>,
    secret_key_file: Option<PathBuf>,
    max_connections: Option<usize>,
    max_connections_per_address: Option<usize>,
    header_timeout: Option<String>,
    client_timeout: Option<String>,
    max_timeout: Option<String>,
    max_memory: Option<String>,
    max_defer: Option<String>,
    max_deferrals: Option<u32>,
    min_body_rate: Option<String>,
    max_long_requests_per_handle: Option<usize>,
    max_long_requests: Option<usize>,
    metrics_token: Option<String>,
    metrics_listen: Option<String>,
    webhook: Option<String>,
    webhook_secret_file: Option<PathBuf>,
    quota_tasks: Option<String>,
    quota_input: Option<String>,
    quota_output: Option<String>,
    quota_text: Option<String>,
    quota_children: Option<String>,
    quota_depth: Option<String>,
    otlp_endpoint: Option<String>,
    tenant_max_priority: Option<i32>,
    tenant_max_running: Option<u32>,
    tenant_max_open: Option<u32>,
    tenant_budget: Option<String>,
    tenant_weight: Option<u32>,
}

pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let file = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            toml::from_str::<FileConfig>(&text)
                .with_context(|| format!("in the config file {}", path.display()))?
        }
        None => FileConfig::default(),
    };
    let tenant_max_priority = args
        .tenant_max_priority
        .or(file.tenant_max_priority)
        .unwrap_or(crate::store::DEFAULT_MAX_PRIORITY);
    let tenant_max_running =
        crate::store::check_max_running(args.tenant_max_running.or(file.tenant_max_running))
            .context("tenant_max_running in the config file")?;
    let tenant_max_open =
        crate::store::check_max_open(args.tenant_max_open.or(file.tenant_max_open))
            .context("tenant_max_open in the config file")?;
    let tenant_budget = args
        .tenant_budget
        .or(file.tenant_budget)
        .map(|text| crate::store::Budget::parse(&text))
        .transpose()
        .map_err(|e| {
            anyhow::anyhow!("--tenant-budget (or tenant_budget in the config file): {e}")
        })?;
    let tenant_weight = args
        .tenant_weight
        .or(file.tenant_weight)
        .map(crate::store::fair::check_weight)
        .transpose()
        .context("tenant_weight in the config file")?;
    let listen = args
        .listen
        .or(file.listen)
        .unwrap_or_else(|| "127.0.0.1:7700".to_owned());
    let data_dir = args
        .data_dir
        .or(file.data_dir)
        .unwrap_or_else(|| PathBuf::from("qhost-data"));
    let db = args
        .db
        .or(file.db)
        .unwrap_or_else(|| format!("sqlite:{}", data_dir.join("qhost.db").display()));
    let node = args.node.or(file.node).unwrap_or_else(hostname);
    anyhow::ensure!(
        !node.is_empty() && node.len() <= 200 && !node.contains(char::is_control),
        "setting `node` must be 1 to 200 printable characters"
    );
    let telemetry = crate::telemetry::init(crate::telemetry::Settings {
        log: Some(args.log_json),
        otlp_endpoint: args.otlp_endpoint.or(file.otlp_endpoint),
        node: node.clone(),
    })?;
    let workers = args.workers.or(file.workers).unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    });
    anyhow::ensure!(
        (1..=1024).contains(&workers),
        "setting `workers` is {workers}; it must be 1 to 1024"
    );
    let grace = match args.grace.or(file.grace) {
        Some(text) => parse_duration(&text).map_err(|e| anyhow::anyhow!("setting `grace`: {e}"))?,
        None => Duration::from_secs(30),
    };
    let lease = match args.lease.or(file.lease) {
        Some(text) => parse_duration(&text).map_err(|e| anyhow::anyhow!("setting `lease`: {e}"))?,
        None => Duration::from_secs(30),
    };
    anyhow::ensure!(
        lease >= Duration::from_secs(1),
        "setting `lease` must be at least 1s"
    );
    let retention = match args.retention.or(file.retention) {
        Some(text) => {
            parse_retention(&text).map_err(|e| anyhow::anyhow!("setting `retention`: {e}"))?
        }
        None => Some(DEFAULT_RETENTION),
    };
    let batch_quotas = args.quotas.quotas(QuotaArgs {
        quota_tasks: file.quota_tasks,
        quota_input: file.quota_input,
        quota_output: file.quota_output,
        quota_text: file.quota_text,
        quota_children: file.quota_children,
        quota_depth: file.quota_depth,
    })?;
    let client_timeout = match args.client_timeout.or(file.client_timeout) {
        Some(text) => {
            parse_duration(&text).map_err(|e| anyhow::anyhow!("setting `client_timeout`: {e}"))?
        }
        None => Duration::from_secs(30),
    };
    anyhow::ensure!(
        client_timeout >= Duration::from_millis(100),
        "setting `client_timeout` must be at least 100ms"
    );
    let mut max_limits = TaskLimits::default_maxima();
    if let Some(text) = args.max_timeout.or(file.max_timeout) {
        max_limits.timeout =
            parse_duration(&text).map_err(|e| anyhow::anyhow!("setting `max_timeout`: {e}"))?;
        anyhow::ensure!(
            max_limits.timeout >= Duration::from_secs(1),
            "setting `max_timeout` must be at least 1s"
        );
    }
    if let Some(text) = args.max_memory.or(file.max_memory) {
        max_limits.memory =
            parse_bytes(&text).map_err(|e| anyhow::anyhow!("setting `max_memory`: {e}"))?;
        anyhow::ensure!(
            (64 * KIB..=TaskLimits::default_maxima().memory).contains(&max_limits.memory),
            "setting `max_memory` must be 64KiB to 4GiB"
        );
    }
    let max_defer = match args.max_defer.or(file.max_defer) {
        Some(text) => {
            let hold =
                parse_duration(&text).map_err(|e| anyhow::anyhow!("setting `max_defer`: {e}"))?;
            anyhow::ensure!(
                (Duration::from_secs(1)..=Duration::from_secs(7 * 24 * 3600)).contains(&hold),
                "setting `max_defer` is {text}; it must be 1s to 7d"
            );
            hold
        }
        None => crate::runtime::DEFAULT_MAX_DEFER,
    };
    let max_deferrals = args
        .max_deferrals
        .or(file.max_deferrals)
        .unwrap_or(crate::runtime::DEFAULT_MAX_DEFERRALS);
    anyhow::ensure!(
        max_deferrals <= 10_000,
        "setting `max_deferrals` is {max_deferrals}; it must be 0 to 10000"
    );
    // What a task that asks none gets stays within what it may ask.
    let mut default_limits = TaskLimits::default();
    default_limits.timeout = default_limits.timeout.min(max_limits.timeout);
    default_limits.memory = default_limits.memory.min(max_limits.memory);
    let open_files = raise_open_file_limit();
    // Half the descriptors stay for the database, artifacts and the files tasks open.
    let room = usize::try_from(open_files / 2).unwrap_or(usize::MAX);
    let max_connections = match args.max_connections.or(file.max_connections) {
        Some(n) => {
            anyhow::ensure!(
                (1..=room).contains(&n),
                "setting `max_connections` is {n}; it must be 1 to {room} (half the \
                 limit on open files, {open_files}; raise that with `ulimit -n` to allow more)"
            );
            n
        }
        None => room.min(DEFAULT_MAX_CONNECTIONS),
    };
    let max_per_address = match args
        .max_connections_per_address
        .or(file.max_connections_per_address)
    {
        Some(n) => {
            anyhow::ensure!(
                (1..=max_connections).contains(&n),
                "setting `max_connections_per_address` is {n}; it must be 1 to \
                 `max_connections` ({max_connections})"
            );
            n
        }
        None => (max_connections / 4).max(1),
    };
    let header_timeout = match args.header_timeout.or(file.header_timeout) {
        Some(text) => {
            parse_duration(&text).map_err(|e| anyhow::anyhow!("setting `header_timeout`: {e}"))?
        }
        None => Duration::from_secs(5),
    };
    anyhow::ensure!(
        header_timeout >= Duration::from_millis(100),
        "setting `header_timeout` must be at least 100ms"
    );
    let min_body_rate = match args.min_body_rate.or(file.min_body_rate) {
        Some(text) => {
            let rate = crate::units::parse_bytes(&text)
                .map_err(|e| anyhow::anyhow!("setting `min_body_rate`: {e}"))?;
            anyhow::ensure!(
                rate >= 1,
                "setting `min_body_rate` must be at least 1 byte a second"
            );
            rate
        }
        None => 64 * 1024,
    };
    let long_per_handle = args
        .max_long_requests_per_handle
        .or(file.max_long_requests_per_handle)
        .unwrap_or(16.min(max_connections));
    anyhow::ensure!(
        (1..=max_connections).contains(&long_per_handle),
        "setting `max_long_requests_per_handle` is {long_per_handle}; it must be 1 to \
         `max_connections` ({max_connections})"
    );
    let long_total = args
        .max_long_requests
        .or(file.max_long_requests)
        .unwrap_or((max_connections / 4).max(1));
    anyhow::ensure!(
        (1..=max_connections).contains(&long_total),
        "setting `max_long_requests` is {long_total}; it must be 1 to `max_connections` \
         ({max_connections})"
    );
    let metrics_token = args.metrics_token.or(file.metrics_token);
    if let Some(token) = &metrics_token {
        anyhow::ensure!(
            token.len() >= 16,
            "setting `metrics_token` must be at least 16 characters"
        );
    }
    let metrics_listen = args.metrics_listen.or(file.metrics_listen);
    let mut mounts = args.mounts;
    for spec in file.mounts {
        mounts.push(
            spec.parse()
                .map_err(|e| anyhow::anyhow!("setting `mounts`: {e}"))?,
        );
    }
    let allow_http = if args.allow_http.is_empty() {
        let mut list = Vec::new();
        for text in file.allow_http.unwrap_or_default() {
            list.push(
                text.parse::<AllowedOrigin>()
                    .map_err(|e| anyhow::anyhow!("setting `allow_http`: {e}"))?,
            );
        }
        list
    } else {
        args.allow_http
    };
    let webhook = server_webhook(
        &allow_http,
        args.webhook.or(file.webhook),
        args.webhook_secret_file.or(file.webhook_secret_file),
    )?;
    create_private_dir(&data_dir).context("setting `data_dir`")?;
    // A task given the data directory could read the admin token or change the database.
    let data_real = data_dir
        .canonicalize()
        .with_context(|| format!("resolving {}", data_dir.display()))?;
    for mount in &mounts {
        if let Ok(dir) = mount.dir.canonicalize()
            && (data_real.starts_with(&dir) || dir.starts_with(&data_real))
        {
            anyhow::bail!(
                "setting `mounts`: {mount} would give tasks the data directory {} (its \
                 admin token and database); mount a directory outside it",
                data_dir.display()
            );
        }
    }
    if let Some(path) = db.strip_prefix("sqlite:") {
        let path = Path::new(path.strip_prefix("//").unwrap_or(path));
        if !path.as_os_str().is_empty() {
            crate::private_file::keep_private(path).context("setting `db`")?;
        }
    }
    let secret_key = match std::env::var("QHOST_SECRET_KEY") {
        Ok(text) => SecretKey::from_hex(&text).context("setting QHOST_SECRET_KEY")?,
        Err(_) => match args.secret_key_file.or(file.secret_key_file) {
            Some(path) => SecretKey::load(&path, false).context("setting `secret_key_file`")?,
            None => SecretKey::load(&data_dir.join("secret-key"), true)?,
        },
    };
    let (admin_token, token_file) = match args.admin_token.or(file.admin_token) {
        Some(token) => {
            anyhow::ensure!(
                token.len() >= 16,
                "setting `admin_token` must be at least 16 characters"
            );
            (token, None)
        }
        None => {
            let path = data_dir.join("admin-token");
            (admin_token_file(&path)?, Some(path))
        }
    };

    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    use std::io::Write;
    tokio.block_on(async move {
        // From here on a signal stops the server gracefully, even one sent while it starts.
        let shutdown = shutdown_signal()?;
        // Listen before touching the queue: a node that cannot serve must not claim work,
        // nor take a node of the same name for its own last run and recover its attempts.
        let listener = tokio::net::TcpListener::bind(listen.as_str())
            .await
            .with_context(|| {
                format!("listening on `{listen}` (give HOST:PORT, such as localhost:7700)")
            })?;
        let limits = api::listen::Limits {
            max_connections,
            max_per_peer: max_per_address,
            header_timeout,
            pace: api::slow::Pace {
                client_timeout,
                body_min_rate: min_body_rate,
            },
        };
        let metrics_listener = match &metrics_listen {
            Some(address) => Some(
                tokio::net::TcpListener::bind(address.as_str())
                    .await
                    .with_context(|| {
                        format!(
                            "setting `metrics_listen`: listening on `{address}` (give HOST:PORT)"
                        )
                    })?,
            ),
            None => None,
        };
        let own_addresses = std::iter::once(&listener)
            .chain(&metrics_listener)
            .map(|l| l.local_addr())
            .collect::<std::io::Result<_>>()?;
        let address = listener.local_addr()?;
        // Serve at once: `/healthz` answers while the store opens, and `/readyz` says
        // what is missing until the API answers.
        let (starting, server) = api::serve_starting(listener, &admin_token, limits, shutdown);
        let store = crate::store::open(&db, &node)
            .await
            .context("setting `db`")?;
        starting.reached(api::ready::Stage::Node);
        // A node that could not open the secrets it would hand to tasks must not start.
        if let Some(sample) = store.grant_secret_sample().await? {
            secret_key.open(&sample.name, &sample.value).context(
                "the store holds secrets this node's secret key cannot open: give it the key \
                 the other nodes use (--secret-key-file or QHOST_SECRET_KEY)",
            )?;
        }
        let mut runtime = RuntimeConfig::with_workers(workers);
        runtime.cache_dir = Some(data_dir.join("artifacts"));
        runtime.mounts = mounts;
        runtime.allow_http = allow_http;
        runtime.max_limits = max_limits;
        runtime.max_defer = max_defer;
        runtime.max_deferrals = max_deferrals;
        runtime.own_addresses = own_addresses;
        let runtime = Arc::new(Runtime::new(runtime)?);
        let node_name = node.clone();
        let mut config = SchedulerConfig::new(node);
        config.lease = lease;
        config.retention = retention;
        config.batch_quotas = batch_quotas;
        config.tenant_max_priority = tenant_max_priority;
        config.tenant_max_running = tenant_max_running;
        config.tenant_max_open = tenant_max_open;
        config.tenant_budget = tenant_budget;
        config.tenant_weight = tenant_weight;
        config.secret_key = Some(secret_key);
        config.default_limits = default_limits;
        config.webhook = webhook;
        let scheduler = Scheduler::new(store, runtime, config);
        let node = Node::start(scheduler.clone()).await?;
        // One line that says what runs, for whoever reads the log after a restart.
        tracing::info!(
            "qhost {} node {node_name}, {workers} workers, store {}, listening on {address}",
            env!("CARGO_PKG_VERSION"),
            crate::store::postgres::redact(&db)
        );
        let mut state = AppState::new(scheduler.clone(), &admin_token);
        state.metrics_token = metrics_token.map(Into::into);
        state.long_polls = api::long_polls::LongPolls::new(api::long_polls::LongLimits {
            per_credential: long_per_handle,
            total: long_total,
        });
        // Ready: whoever reads the line below may use the API at once.
        starting.start(state.clone());
        // Whoever started us may have stopped reading stdout: that must not stop the server.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "qhost listening on http://{address}");
        if let Some(metrics) = &metrics_listener {
            let _ = writeln!(out, "metrics on http://{}/metrics", metrics.local_addr()?);
        }
        let _ = match &token_file {
            Some(path) => writeln!(out, "admin token in {}", path.display()),
            None => writeln!(out, "admin token from the configuration"),
        };
        let _ = out.flush();
        drop(out);
        let stop_ticking = tokio_util::sync::CancellationToken::new();
        let sampler = tokio::spawn(
            state
                .history
                .clone()
                .sample(scheduler.clone(), stop_ticking.clone()),
        );
        let stopped = tokio_util::sync::CancellationToken::new();
        let metrics_server = metrics_listener.map(|listener| {
            tokio::spawn(api::serve_metrics(
                listener,
                state.clone(),
                limits,
                stopped.clone().cancelled_owned(),
            ))
        });
        drop(state);
        let _ = server.await;
        stopped.cancel();
        if let Some(metrics_server) = metrics_server {
            let _ = metrics_server.await;
        }
        stop_ticking.cancel();
        let _ = sampler.await;
        tracing::info!(
            "stopping: running tasks have {} to finish",
            humantime::format_duration(grace)
        );
        node.stop(grace).await?;
        tracing::info!("stopped");
        Ok::<_, anyhow::Error>(())
    })?;
    // The spans of the last attempts go out before the process ends.
    telemetry.shutdown();
    Ok(ExitCode::SUCCESS)
}

/// How long ended work is kept unless the setting says otherwise.
const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// A retention: a duration of at least a second, or `off`/`0` for none (keep for ever).
fn parse_retention(text: &str) -> Result<Option<Duration>, String> {
    match text.trim() {
        "off" | "0" => Ok(None),
        text => {
            let retention = parse_duration(text)?;
            if retention < Duration::from_secs(1) {
                return Err(format!(
                    "`{text}` is less than a second; give `off` to keep ended work for ever"
                ));
            }
            Ok(Some(retention))
        }
    }
}

/// Connections open at once, unless the open-file limit allows fewer.
const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// Raises this process's soft limit on open files to its hard limit: every connection
/// takes one, and a login shell's soft limit (often 1024) is soon reached. Returns the
/// limit in force.
fn raise_open_file_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            tracing::warn!(
                "reading the open-file limit failed: {}",
                std::io::Error::last_os_error()
            );
            return 1024;
        }
        // An unlimited hard limit is still bounded by the kernel's (fs.nr_open).
        let target = limit.rlim_max.min(1 << 20);
        if limit.rlim_cur < target {
            let raised = libc::rlimit {
                rlim_cur: target,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                tracing::debug!(
                    "raised the open-file limit from {} to {}",
                    limit.rlim_cur,
                    raised.rlim_cur
                );
                return raised.rlim_cur;
            }
            tracing::warn!(
                "raising the open-file limit to {target} failed: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    limit.rlim_cur
}

/// The admin token kept in the data directory, created (readable by its owner only) on
/// first start.
fn admin_token_file(path: &Path) -> anyhow::Result<String> {
    if let Ok(token) = std::fs::read_to_string(path) {
        let token = token.trim();
        anyhow::ensure!(
            !token.is_empty(),
            "the admin token file {} is empty: delete it to have a token generated, or \
             write one of at least 16 characters in it",
            path.display()
        );
        anyhow::ensure!(
            token.len() >= 16,
            "the admin token in {} is shorter than 16 characters: delete the file to have \
             a token generated, or write a longer one in it",
            path.display()
        );
        crate::private_file::keep_private(path)?;
        return Ok(token.to_owned());
    }
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|e| anyhow::anyhow!("random source: {e}"))?;
    let token = format!("qha_{}", hex::encode(secret));
    crate::private_file::create(path, &token)?;
    Ok(token)
}

/// Makes `path` readable and writable by its owner only, creating it empty if it does not
/// exist.
fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "qhost".into())
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed at once, not when the future
/// is first polled: a signal sent while the server starts, or as soon as it says it
/// listens, must stop it gracefully, not kill it.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("handling SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("handling SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = term.recv() => {}
        }
        tracing::info!("shutdown requested");
    })
}
/// The server's webhook: its URL within `allow_http`, and its secret, from
/// QHOST_WEBHOOK_SECRET or the file `secret_file`.
fn server_webhook(
    allow_http: &[AllowedOrigin],
    url: Option<String>,
    secret_file: Option<PathBuf>,
) -> anyhow::Result<Option<crate::webhooks::ServerWebhook>> {
    let Some(url) = url else {
        anyhow::ensure!(
            secret_file.is_none(),
            "setting `webhook_secret_file` is given without `webhook`"
        );
        return Ok(None);
    };
    crate::webhooks::check_url(allow_http, &url, "setting `webhook`")
        .map_err(anyhow::Error::msg)?;
    let secret = match std::env::var("QHOST_WEBHOOK_SECRET") {
        Ok(secret) => secret,
        Err(_) => {
            let path = secret_file.context(
                "setting `webhook` needs its secret: give `webhook_secret_file` (or \
                 QHOST_WEBHOOK_SECRET)",
            )?;
            std::fs::read_to_string(&path)
                .with_context(|| {
                    format!("setting `webhook_secret_file`: reading {}", path.display())
                })?
                .trim()
                .to_owned()
        }
    };
    crate::webhooks::check_secret(&secret, "setting `webhook_secret_file`")
        .map_err(anyhow::Error::msg)?;
    Ok(Some(crate::webhooks::ServerWebhook { url, secret }))
}
