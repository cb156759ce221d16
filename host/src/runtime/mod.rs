//! The task runtime: loads components, and runs each task attempt in a fresh, sandboxed
//! `Store` on one of a fixed number of instance slots.
//!
//! - [`engine`]: the engines, with their pooling allocators.
//! - [`artifacts`]: precompiled components cached on disk.
//! - [`sandbox`]: the WASI context, mounts and the `qhost:task/host` implementation.
//! - [`limits`], [`capture`], [`epoch`]: what bounds a run and how it is enforced.
//! - [`outcome`]: how a run ended.
//! - [`digest`]: what names a module; [`producers`]: what a module says made it;
//!   [`slots`]: the instance slots.
//! - [`settings`]: what a task reads through `wasi:config/store`.
//! - [`graph`]: what a task reads of the tasks it runs after (`qhost:task/graph`).
//! - [`spawn`]: the children a task submits, and its suspension (`qhost:task/spawn`).
//! - [`origin`], [`address`], [`http_gate`], [`http_send`], [`http_metrics`]: outbound
//!   HTTP, under the operator's allow-list and the batch's grant.

mod address;
mod artifacts;
mod bindings;
mod budget;
mod capture;
mod cpu;
mod digest;
mod engine;
mod epoch;
pub mod graph;
pub(crate) mod http_gate;
mod http_metrics;
pub(crate) mod http_send;
pub mod limits;
mod links;
pub mod origin;
pub mod outcome;
pub mod producers;
pub mod sandbox;
mod settings;
mod slots;
pub mod spawn;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store, UpdateDeadline};

use artifacts::ArtifactCache;
pub use artifacts::create_private_dir;
use bindings::TaskSpawnPre as TaskPre;
pub use budget::RunBudget;
use capture::{LogCapture, OutputCapture};
pub use digest::Digest;
use engine::MemoryInit;
use epoch::EpochTicker;
pub use graph::{DepEnded, Dependency, Inputs};
use http_gate::{HttpGate, HttpLedger};
use limits::MemoryLimiter;
pub use limits::TaskLimits;
pub use origin::AllowedOrigin;
pub use outcome::{Captured, HttpCall, LogLevel, LogLine, Outcome, RunReport};
pub use producers::Producers;
use sandbox::HostState;
pub use sandbox::{Mount, MountGrant};
pub use settings::GrantedSetting;
pub use slots::Slot;
use slots::SlotPool;
pub use spawn::{ChildSpec, Children};

/// How a runtime is set up.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Instance slots: at most this many tasks execute at once.
    pub workers: usize,
    /// Where precompiled components are kept; `None` compiles on every start.
    pub cache_dir: Option<PathBuf>,
    /// The largest limits a task may ask for; the memory maximum sizes the slots.
    pub max_limits: TaskLimits,
    /// Wasm stack of every task, in bytes.
    pub max_wasm_stack: usize,
    /// The directories the operator offers to tasks by name.
    pub mounts: Vec<Mount>,
    /// The origins tasks may reach over HTTP, when their batch was granted them too.
    pub allow_http: Vec<AllowedOrigin>,
    /// The server's own listen addresses: a task reaches them only through allow-list
    /// entries (the operator's and its grant) that name their very port.
    pub own_addresses: Vec<std::net::SocketAddr>,
    /// The longest wait a task may ask through `retry-after`; it gets this when it asks
    /// more.
    pub max_defer: Duration,
    /// How many times one task may be deferred; the attempt that asks once more counts
    /// as a failure.
    pub max_deferrals: u32,
}

/// The default of [`RuntimeConfig::max_defer`]: an hour.
pub const DEFAULT_MAX_DEFER: Duration = Duration::from_secs(3600);
/// The default of [`RuntimeConfig::max_deferrals`].
pub const DEFAULT_MAX_DEFERRALS: u32 = 20;

impl RuntimeConfig {
    pub fn with_workers(workers: usize) -> Self {
        RuntimeConfig {
            workers,
            cache_dir: None,
            max_limits: TaskLimits::default_maxima(),
            max_wasm_stack: 512 * 1024,
            mounts: Vec::new(),
            allow_http: Vec::new(),
            own_addresses: Vec::new(),
            max_defer: DEFAULT_MAX_DEFER,
            max_deferrals: DEFAULT_MAX_DEFERRALS,
        }
    }
}

/// Why a component was refused.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("not a WebAssembly file: it does not start with the `\\0asm` magic bytes")]
    NotWasm,
    #[error(
        "this is a core WebAssembly module, not a component; build for wasm32-wasip2 \
         (or wrap it with `wasm-tools component new`)"
    )]
    CoreModule,
    #[error("not a valid component: {0}")]
    Invalid(String),
    #[error(
        "the component imports something qhost does not provide: {0}; a task may import \
         qhost:task/host@0.1.x, qhost:task/graph@0.1.x, qhost:task/spawn@0.1.x and WASI 0.2 interfaces (wasi:http \
         included) only"
    )]
    UnsupportedImport(String),
    #[error("the component does not export the qhost:task world's `run` function: {0}")]
    WrongExports(String),
    /// The component is fine but this host could not get it ready to run.
    #[error("the host could not prepare the component: {0}")]
    Host(String),
}

/// A loaded component, ready to be instantiated for each task.
pub struct TaskModule {
    digest: Digest,
    pre: TaskPre<HostState>,
}

impl TaskModule {
    pub fn digest(&self) -> Digest {
        self.digest
    }
}

/// What one attempt is given by the scheduler (or `qhost run`).
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    pub id: u64,
    pub batch: u64,
    pub attempt: u32,
    pub order: i64,
    pub group: Option<String>,
}

/// One attempt to run.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    pub input: Vec<u8>,
    pub info: RunInfo,
    pub limits: TaskLimits,
    pub mounts: Vec<MountGrant>,
    /// The origins its batch was granted (`allow_http`); requests go out only to those
    /// the operator's list allows too.
    pub allow_http: Arc<[AllowedOrigin]>,
    /// The settings its batch was granted, in clear: the task reads them through
    /// `wasi:config/store`; secret ones are scrubbed from what the run leaves behind.
    pub settings: Arc<[GrantedSetting]>,
    /// Cancelling it stops the run promptly with outcome `cancelled`.
    pub cancel: CancellationToken,
    /// Where the task reads the tasks it runs after (`qhost:task/graph`); none: it runs
    /// after none.
    pub inputs: Option<Inputs>,
    /// Where the task submits children (`qhost:task/spawn`); none: it may not (`qhost
    /// run`).
    pub children: Option<Arc<dyn Children>>,
    /// What it may use, what its tenant's budget had left when it was claimed: past any
    /// of it the run ends with outcome `budget`.
    pub budget: RunBudget,
    /// The context of the attempt's span, when traces are on: its outbound requests
    /// carry it.
    pub trace: Option<opentelemetry::trace::SpanContext>,
}

/// Components up to this size get their memory's data copied in at instantiation, larger
/// ones mapped copy-on-write (see [`engine::MemoryInit`]). A component's size bounds
/// the data it can copy.
const COPY_INIT_MAX_BYTES: usize = 1 << 20;

/// An engine and the linker of the host functions for it.
struct Flavor {
    engine: Engine,
    linker: Linker<HostState>,
}

impl Flavor {
    fn new(config: &RuntimeConfig, init: MemoryInit) -> anyhow::Result<Self> {
        let engine = engine::build(config, init)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
        wasmtime_wasi_config::add_to_linker(&mut linker, |state: &mut HostState| {
            wasmtime_wasi_config::WasiConfig::new(&state.config)
        })?;
        links::guard_symlinks(&mut linker)?;
        bindings::TaskSpawn::add_to_linker::<_, wasmtime::component::HasSelf<_>>(
            &mut linker,
            |state: &mut HostState| state,
        )?;
        Ok(Flavor { engine, linker })
    }
}

/// Loads components and runs tasks on a fixed pool of instance slots.
pub struct Runtime {
    copied: Flavor,
    mapped: Flavor,
    config: RuntimeConfig,
    slots: SlotPool,
    artifacts: Option<ArtifactCache>,
    loaded: Mutex<HashMap<Digest, Arc<TaskModule>>>,
    ticker: EpochTicker,
    allow_http: Arc<[AllowedOrigin]>,
    own_addresses: Arc<[std::net::SocketAddr]>,
    http_metrics: http_metrics::HttpMetrics,
}

impl Runtime {
    pub fn new(config: RuntimeConfig) -> anyhow::Result<Self> {
        anyhow::ensure!(config.workers >= 1, "workers must be at least 1");
        let copied = Flavor::new(&config, MemoryInit::Copy)?;
        let mapped = Flavor::new(&config, MemoryInit::Map)?;
        let artifacts = match &config.cache_dir {
            Some(dir) => Some(ArtifactCache::open(dir)?),
            None => None,
        };
        let ticker = EpochTicker::start(vec![copied.engine.weak(), mapped.engine.weak()])
            .context("starting the epoch thread")?;
        Ok(Runtime {
            slots: SlotPool::new(config.workers),
            allow_http: config.allow_http.clone().into(),
            own_addresses: config.own_addresses.clone().into(),
            http_metrics: Default::default(),
            copied,
            mapped,
            config,
            artifacts,
            loaded: Mutex::new(HashMap::new()),
            ticker,
        })
    }

    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// How many slots are running a task right now.
    pub fn busy_slots(&self) -> usize {
        self.config.workers - self.slots.free()
    }

    /// The count of tasks' outbound HTTP requests, in Prometheus text format.
    pub fn render_http_metrics(&self, out: &mut String) {
        self.http_metrics.render(out);
    }

    /// Reads and loads a component file.
    pub fn load_file(&self, path: &Path) -> anyhow::Result<Arc<TaskModule>> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        self.load(&bytes)
            .with_context(|| format!("loading {}", path.display()))
    }

    /// Validates and compiles a component (or takes its cached artifact), and checks that
    /// it is a qhost task. Compiling is CPU-heavy: call it off the async executor.
    pub fn load(&self, bytes: &[u8]) -> Result<Arc<TaskModule>, LoadError> {
        if !bytes.starts_with(b"\0asm") {
            return Err(LoadError::NotWasm);
        }
        // The 4 bytes after the magic are the version: 1 for a core module.
        if bytes.get(4..8) == Some(&[1, 0, 0, 0]) {
            return Err(LoadError::CoreModule);
        }
        let digest = Digest::of(bytes);
        if let Some(module) = self.loaded.lock().expect("loaded lock").get(&digest) {
            return Ok(module.clone());
        }
        let flavor = if bytes.len() <= COPY_INIT_MAX_BYTES {
            &self.copied
        } else {
            &self.mapped
        };
        let component = self.compile(&flavor.engine, &digest, bytes)?;
        engine::prepare_images(&component).map_err(|e| LoadError::Host(format!("{e:#}")))?;
        let pre = flavor
            .linker
            .instantiate_pre(&component)
            .map_err(|e| LoadError::UnsupportedImport(format!("{e:#}")))?;
        let pre = TaskPre::new(pre).map_err(|e| LoadError::WrongExports(format!("{e:#}")))?;
        let module = Arc::new(TaskModule { digest, pre });
        self.loaded
            .lock()
            .expect("loaded lock")
            .insert(digest, module.clone());
        Ok(module)
    }

    fn compile(
        &self,
        engine: &Engine,
        digest: &Digest,
        bytes: &[u8],
    ) -> Result<Component, LoadError> {
        if let Some(component) = self
            .artifacts
            .as_ref()
            .and_then(|cache| cache.load(engine, digest))
        {
            return Ok(component);
        }
        let component =
            Component::new(engine, bytes).map_err(|e| LoadError::Invalid(format!("{e:#}")))?;
        if let Some(cache) = &self.artifacts
            && let Err(err) = cache.store(digest, &component)
        {
            tracing::warn!(%digest, "could not cache the compiled component: {err:#}");
        }
        Ok(component)
    }

    /// Runs one attempt. Waits for a free slot first: the slots bound parallelism and a run
    /// never fails for lack of one. Errors only for a host-side failure (a mount that cannot
    /// be opened); everything the task does ends in the report's outcome.
    pub async fn run(&self, module: &TaskModule, request: RunRequest) -> anyhow::Result<RunReport> {
        let slot = self.slot().await;
        self.run_in(slot, module, request).await
    }

    /// Waits for a free slot. Waiters get slots first come, first served, so a caller that
    /// asks in some order starts its runs in that order.
    pub async fn slot(&self) -> Slot {
        self.slots.acquire().await
    }

    /// Runs one attempt in a slot from [`Runtime::slot`], which it frees when it returns.
    pub async fn run_in(
        &self,
        slot: Slot,
        module: &TaskModule,
        request: RunRequest,
    ) -> anyhow::Result<RunReport> {
        let _ticking = self.ticker.running();
        let started_at = SystemTime::now();
        let started = Instant::now();
        let limits = request.limits;

        let stdout = OutputCapture::new(limits.stdout);
        let stderr = OutputCapture::new(limits.stderr);
        let wasi = sandbox::wasi_context(&self.config.mounts, &request.mounts, &stdout, &stderr)?;
        let gate = HttpGate::new(
            self.allow_http.clone(),
            request.allow_http.clone(),
            self.own_addresses.clone(),
            limits,
            request.budget.http_bytes,
            started,
            request.trace.clone(),
        );
        let ledger = gate.ledger();
        let memory = budget::memory_clock(started);
        let memory_held = memory.subscribe();
        let mut store = Store::new(
            module.pre.engine(),
            HostState {
                wasi,
                table: ResourceTable::new(),
                limiter: MemoryLimiter::with_clock(limits.memory, memory),
                log: LogCapture::new(limits.log, started),
                http: wasmtime_wasi_http::WasiHttpCtx::new(),
                gate,
                config: settings::variables(&request.settings),
                inputs: request.inputs.clone(),
                children: request.children.clone(),
                suspended: None,
                retry_after: None,
                max_defer: self.config.max_defer,
            },
        );
        store.limiter(|state| &mut state.limiter);
        // Yield to the executor at every epoch tick, so that the timeout and cancellation
        // below are noticed even while the guest spins.
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|_| Ok(UpdateDeadline::Yield(1)));

        let info = bindings::qhost::task::types::TaskInfo {
            id: request.info.id,
            batch: request.info.batch,
            attempt: request.info.attempt,
            order: request.info.order,
            group: request.info.group.clone(),
        };
        let (ended, cpu) = {
            let mut call = cpu::Timed::new(
                async {
                    let task = module.pre.instantiate_async(&mut store).await?;
                    task.call_run(&mut store, &request.input, &info).await
                },
                request.budget.cpu,
            );
            let ended = tokio::select! {
                result = tokio::time::timeout(limits.timeout, &mut call) => match result {
                    Ok(Some(result)) => Ended::Returned(result),
                    Ok(None) => {
                        Ended::OverBudget(budget::Used::Cpu(request.budget.cpu.unwrap_or_default()))
                    }
                    Err(_) => Ended::TimedOut,
                },
                () = request.cancel.cancelled() => Ended::Cancelled,
                // A request past an HTTP limit ends the attempt, even one the guest
                // does not wait for.
                () = ledger.tripped.cancelled() => Ended::HttpLimit,
                // Memory is held while the guest waits too: its budget is a deadline.
                () = budget::memory_spent(memory_held, request.budget.memory_mib_seconds) => {
                    Ended::OverBudget(budget::Used::Memory(
                        request.budget.memory_mib_seconds.unwrap_or_default(),
                    ))
                }
            };
            (ended, call.used())
        };
        let duration = started.elapsed();
        let state = store.into_data();
        let memory_mib_seconds = state.limiter.mib_seconds(started + duration);
        let stderr = stderr.take();
        let (outcome, output, error) =
            match classify(ended, &state.limiter, &limits, &stderr, &ledger) {
                // It asked to suspend, then returned `ok`: its state is what the attempt keeps.
                (Outcome::Succeeded, _, None)
                    if state.suspended.is_some() && state.retry_after.is_none() =>
                {
                    (Outcome::Suspended, state.suspended, None)
                }
                ended => ended,
            };
        let (outcome, output, error, retry_after) =
            deferred(outcome, output, error, state.retry_after);
        let http = ledger.take();
        self.http_metrics.count(&http);
        let mut report = RunReport {
            outcome,
            output,
            error,
            logs: state.log.lines,
            logs_dropped: state.log.dropped,
            stdout: stdout.take(),
            stderr,
            http,
            retry_after,
            slot: slot.index(),
            started_at,
            duration,
            cpu,
            memory_mib_seconds,
            http_bytes: ledger.moved(),
        };
        settings::scrub(&mut report, &request.settings);
        Ok(report)
    }
}

/// A run that asked through `retry-after` to run again later and then returned ends
/// `deferred`, whatever it returned; one stopped by the host (a trap, a limit, a cancel)
/// ends as it did.
#[allow(clippy::type_complexity)]
fn deferred(
    outcome: Outcome,
    output: Option<Vec<u8>>,
    error: Option<String>,
    asked: Option<Duration>,
) -> (Outcome, Option<Vec<u8>>, Option<String>, Option<Duration>) {
    match asked {
        Some(wait)
            if matches!(
                outcome,
                Outcome::Succeeded | Outcome::GuestError | Outcome::OutputTooLarge
            ) =>
        {
            let error = format!(
                "deferred: asked to run again in {}",
                humantime::format_duration(wait)
            );
            (Outcome::Deferred, None, Some(error), Some(wait))
        }
        _ => (outcome, output, error, None),
    }
}

enum Ended {
    Returned(wasmtime::Result<Result<Vec<u8>, String>>),
    TimedOut,
    /// It used what its tenant's budget had left of a meter.
    OverBudget(budget::Used),
    Cancelled,
    HttpLimit,
}

/// How a run ended: its outcome, its output if it succeeded, and its error message
/// otherwise, cut at [`limits::MAX_ERROR_BYTES`] whatever produced it.
fn classify(
    ended: Ended,
    limiter: &MemoryLimiter,
    limits: &TaskLimits,
    stderr: &Captured,
    ledger: &HttpLedger,
) -> (Outcome, Option<Vec<u8>>, Option<String>) {
    // A limit passed ends the attempt even when the guest carried on and returned.
    let (outcome, output, error) = match ledger.trip_reason() {
        Some((outcome, reason)) => (outcome, None, Some(reason)),
        None => classify_uncut(ended, limiter, limits, stderr),
    };
    let error = error.map(|e| outcome::cut_text(e, limits::MAX_ERROR_BYTES));
    (outcome, output, error)
}

fn classify_uncut(
    ended: Ended,
    limiter: &MemoryLimiter,
    limits: &TaskLimits,
    stderr: &Captured,
) -> (Outcome, Option<Vec<u8>>, Option<String>) {
    match ended {
        Ended::Returned(Ok(Ok(output))) if output.len() as u64 > limits.output => (
            Outcome::OutputTooLarge,
            None,
            Some(format!(
                "returned {} of output, over the limit of {}",
                bytesize::ByteSize(output.len() as u64),
                bytesize::ByteSize(limits.output)
            )),
        ),
        Ended::Returned(Ok(Ok(output))) => (Outcome::Succeeded, Some(output), None),
        Ended::Returned(Ok(Err(message))) => (Outcome::GuestError, None, Some(message)),
        Ended::Returned(Err(trap)) => {
            let mut message = match trap.downcast_ref::<wasmtime::Trap>() {
                Some(code) => code.to_string(),
                None => format!("{trap:#}"),
            };
            if let Some(tail) = stderr_tail(&stderr.bytes) {
                message = format!("{message} (stderr: {tail})");
            }
            if limiter.refused {
                let limit = bytesize::ByteSize(limits.memory);
                (
                    Outcome::MemoryLimit,
                    None,
                    Some(format!("memory limit of {limit} reached: {message}")),
                )
            } else {
                (Outcome::Trap, None, Some(message))
            }
        }
        Ended::TimedOut => (
            Outcome::Timeout,
            None,
            Some(format!(
                "ran longer than its timeout of {}",
                humantime::format_duration(limits.timeout)
            )),
        ),
        Ended::OverBudget(used) => (Outcome::Budget, None, Some(used.message())),
        Ended::Cancelled => (
            Outcome::Cancelled,
            None,
            Some("cancelled while running".into()),
        ),
        Ended::HttpLimit => (
            Outcome::HttpLimit,
            None,
            Some("an outbound HTTP limit was reached".into()),
        ),
    }
}

/// The last lines a trapping guest wrote to stderr: for Rust, the panic and its message.
fn stderr_tail(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut lines: Vec<&str> = text
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(3)
        .collect();
    lines.reverse();
    let tail = lines.join(" / ");
    let start = tail.len().saturating_sub(500);
    let start = (start..=tail.len())
        .find(|&i| tail.is_char_boundary(i))
        .unwrap_or(0);
    (!tail.is_empty()).then(|| tail[start..].to_owned())
}
