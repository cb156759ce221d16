//! The `qhost` command line: the argument structs (clap derive) and the dispatch to one
//! file per subcommand.

mod bench;
mod run;
mod serve;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit code for a task that ran and did not succeed.
pub const EXIT_TASK_FAILED: u8 = 1;
/// Exit code for anything that kept qhost from doing what was asked.
pub const EXIT_ERROR: u8 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "qhost",
    version,
    about = "A durable task runner for WebAssembly components"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one task locally, without a server, and print its output.
    Run(run::RunArgs),
    /// Run a node with the HTTP API (SQLite store in the data directory).
    Serve(serve::ServeArgs),
    /// Measure drain throughput: queue no-op tasks in a fresh store and run them all.
    Bench(bench::BenchArgs),
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Serve(args) => serve::run(args),
    }
}

/// Error values inside wasmtime and anyhow capture a backtrace when `RUST_BACKTRACE` is
/// set, which halves task throughput. Keep library backtraces off unless asked for with
/// `RUST_LIB_BACKTRACE`; panics still honour `RUST_BACKTRACE`.
pub fn quiet_library_backtraces() {
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        // SAFETY: called first thing in `main`, before any other thread exists.
        unsafe { std::env::set_var("RUST_LIB_BACKTRACE", "0") };
    }
}
