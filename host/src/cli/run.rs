//! `qhost run`: runs one task locally, the way an author tries a component.
//!
//! The output goes to stdout as raw bytes; log lines and captured stdout/stderr go to
//! stderr. Exit code 0 when the task succeeded, 1 when it ran and did not, 2 when it could
//! not be run at all.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use super::EXIT_TASK_FAILED;
use crate::runtime::{Mount, MountGrant, RunInfo, RunRequest, Runtime, RuntimeConfig, TaskLimits};
use crate::units::{parse_bytes, parse_duration};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The component to run (a .wasm file targeting the qhost:task world).
    pub component: PathBuf,
    /// The task's input, as text.
    #[arg(long, conflicts_with = "input_file")]
    pub input: Option<String>,
    /// Read the task's input from a file. Without --input or --input-file, stdin is read
    /// (unless it is a terminal).
    #[arg(long)]
    pub input_file: Option<PathBuf>,
    /// Wall-clock limit, such as 500ms or 30s.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Linear memory limit, such as 64MiB.
    #[arg(long, default_value = "64MiB", value_parser = parse_bytes)]
    pub memory: u64,
    /// Output size limit.
    #[arg(long, default_value = "1MiB", value_parser = parse_bytes)]
    pub max_output: u64,
    /// Give the task a directory, seen as /NAME inside it: NAME=DIR, read-only unless
    /// :rw is appended. Repeatable.
    #[arg(long = "mount", value_name = "NAME=DIR[:ro|:rw]")]
    pub mounts: Vec<Mount>,
    /// Where compiled components are cached (default: the user's cache directory).
    #[arg(long, env = "QHOST_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Compile the component without reading or writing the cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Print one JSON object on stdout: the outcome, the output (as text, or in hex when
    /// it is not UTF-8), the error, the log lines, stdout and stderr, and how long it took.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let input = read_input(&args)?;
    let limits = TaskLimits {
        memory: args.memory,
        timeout: args.timeout,
        output: args.max_output,
        ..TaskLimits::default()
    };
    let mut config = RuntimeConfig::with_workers(1);
    limits
        .check_within(&config.max_limits)
        .context("checking the limits")?;
    config.cache_dir = if args.no_cache {
        None
    } else {
        args.cache_dir.clone().or_else(default_cache_dir)
    };
    let grants = args
        .mounts
        .iter()
        .map(|m| MountGrant {
            name: m.name.clone(),
            writable: m.writable,
        })
        .collect();
    config.mounts = args.mounts;

    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let report = tokio.block_on(async {
        let runtime = Runtime::new(config)?;
        let module = runtime.load_file(&args.component)?;
        let request = RunRequest {
            input,
            info: RunInfo {
                attempt: 1,
                ..RunInfo::default()
            },
            limits,
            mounts: grants,
            ..RunRequest::default()
        };
        runtime.run(&module, request).await
    })?;

    let failed = if report.outcome.is_success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_TASK_FAILED)
    };
    if args.json {
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        let output = report.output.as_deref();
        let utf8 = output.and_then(|o| std::str::from_utf8(o).ok());
        super::client::print_json(&serde_json::json!({
            "outcome": report.outcome.as_str(),
            "output": utf8,
            "output_hex": output.filter(|_| utf8.is_none()).map(hex::encode),
            "error": report.error,
            "logs": report.logs.iter().map(|l| serde_json::json!({
                "at_micros": l.at_micros,
                "level": l.level.as_str(),
                "message": l.message,
            })).collect::<Vec<_>>(),
            "logs_dropped": report.logs_dropped,
            "stdout": text(&report.stdout.bytes),
            "stderr": text(&report.stderr.bytes),
            "duration_micros": report.duration.as_micros() as u64,
        }))?;
        return Ok(failed);
    }
    // What the task said goes to stderr, written at once; a closed stderr loses it and
    // nothing else: the output and the exit code stay.
    let mut err = Vec::new();
    for line in &report.logs {
        writeln!(
            err,
            "[{} +{}µs] {}",
            line.level.as_str(),
            line.at_micros,
            line.message
        )?;
    }
    for (name, captured) in [("stdout", &report.stdout), ("stderr", &report.stderr)] {
        if !captured.bytes.is_empty() {
            writeln!(err, "--- captured {name} ---")?;
            err.write_all(&captured.bytes)?;
            if !captured.bytes.ends_with(b"\n") {
                writeln!(err)?;
            }
        }
        if captured.dropped > 0 {
            writeln!(
                err,
                "--- {name}: {} more bytes dropped ---",
                captured.dropped
            )?;
        }
    }
    if report.logs_dropped > 0 {
        writeln!(err, "--- {} log lines dropped ---", report.logs_dropped)?;
    }
    let _ = std::io::stderr().write_all(&err);
    match report.output {
        Some(output) if report.outcome.is_success() => {
            std::io::stdout().write_all(&output)?;
            Ok(ExitCode::SUCCESS)
        }
        _ => {
            let error = report.error.unwrap_or_default();
            errln!("task ended with outcome `{}`: {error}", report.outcome);
            Ok(ExitCode::from(EXIT_TASK_FAILED))
        }
    }
}

fn read_input(args: &RunArgs) -> anyhow::Result<Vec<u8>> {
    if let Some(text) = &args.input {
        return Ok(text.clone().into_bytes());
    }
    if let Some(path) = &args.input_file {
        return std::fs::read(path)
            .with_context(|| format!("reading input file {}", path.display()));
    }
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(Vec::new());
    }
    let mut input = Vec::new();
    stdin
        .read_to_end(&mut input)
        .context("reading the input from stdin")?;
    Ok(input)
}

fn default_cache_dir() -> Option<PathBuf> {
    dirs::cache_dir().map(|dir| dir.join("qhost").join("artifacts"))
}
