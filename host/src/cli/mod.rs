//! The `qhost` command line: the argument structs (clap derive) and the dispatch to one
//! file per subcommand.
//!
//! Local: [`run`] (one task, no server), [`serve`] (a node with the HTTP API), [`bench`]
//! (and [`bench_fill`]), [`new`] (a task project, from [`new_templates`]).
//! Clients of a server, sharing [`client`] (server address, token, errors): [`module`],
//! [`submit`], [`batch`] (with the plan file of [`plan`]), [`task`] (its bulk actions in
//! [`task_bulk`]), [`lists`] (`batch ls`, `task ls`), [`group`], [`status`], [`nodes`],
//! [`log`], [`health`], [`backup`], [`tenant`]; and [`completions`].

/// `println!` that hands back the write's error instead of panicking, for `?`: a reader
/// that stopped reading (`| head`) then ends the command quietly (see [`broken_pipe`]).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), $($arg)*)
    }};
}

/// `eprintln!` that never panics: on a stderr nobody reads any more (a closed pipe) the
/// line is lost, as nobody could have read it, and the command goes on.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod backup;
mod batch;
mod batch_quota;
mod bench;
pub mod bench_fill;
mod bench_rate;
mod client;
mod completions;
pub mod exit;
mod group;
mod health;
mod lists;
mod log;
mod module;
mod new;
mod new_templates;
mod nodes;
mod plan;
mod run;
mod schedule;
mod serve;
mod serve_quotas;
mod status;
mod submit;
mod task;
mod task_bulk;
mod task_logs;
mod tenant;
mod tenant_usage;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit code for a task that ran and did not succeed.
pub const EXIT_TASK_FAILED: u8 = exit::TASK_FAILED;

#[derive(Debug, Parser)]
#[command(
    name = "qhost",
    version,
    about = "A durable task runner for WebAssembly components",
    after_help = exit::HELP
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
    Serve(Box<serve::ServeArgs>),
    /// Measure drain throughput: queue no-op tasks in a fresh store and run them all.
    Bench(bench::BenchArgs),
    /// Add, list and delete the server's modules.
    Module(module::ModuleArgs),
    /// Submit one task to the server.
    Submit(submit::SubmitArgs),
    /// Open batches, submit plans, follow, reprioritize, pause, re-drive, cancel and
    /// release them.
    Batch(batch::BatchArgs),
    /// List tasks; show a task, print its output, cancel it, run it again, reprioritize it;
    /// cancel, retry or reprioritize the tasks a filter names.
    Task(task::TaskArgs),
    /// Set or show a group's limit; pause and resume a group.
    Group(group::GroupArgs),
    /// Schedules that open a batch from a plan on a cron expression.
    Schedule(schedule::ScheduleArgs),
    /// The queue at a glance (tasks per state, groups, batches, nodes) and what runs now,
    /// where.
    Status(status::StatusArgs),
    /// The nodes sharing the store: heartbeats, clock offsets, slots busy.
    Nodes(nodes::NodesArgs),
    /// The execution log.
    Log(log::LogArgs),
    /// Whether the server lives (exit 0) or not (exit 1); with --ready, whether it has
    /// started: for health checks.
    Health(health::HealthArgs),
    /// Add tenants, who may open batches of their own, and make and revoke their tokens.
    Tenant(tenant::TenantArgs),
    /// Copy a running server's SQLite store into a file, consistently, while it serves.
    Backup(backup::BackupArgs),
    /// Print a shell completion script.
    Completions(completions::CompletionsArgs),
    /// Write a new task project (Rust, Python, JavaScript or C) with the guest SDK, ready
    /// to build into a component and try with `qhost run`.
    New(new::NewArgs),
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Serve(args) => serve::run(*args),
        Command::Module(args) => module::run(args),
        Command::Submit(args) => submit::run(args),
        Command::Batch(args) => batch::run(args),
        Command::Task(args) => task::run(args),
        Command::Group(args) => group::run(args),
        Command::Schedule(args) => schedule::run(args),
        Command::Status(args) => status::run(args),
        Command::Nodes(args) => nodes::run(args),
        Command::Log(args) => log::run(args),
        Command::Health(args) => health::run(args),
        Command::Backup(args) => backup::run(args),
        Command::Tenant(args) => tenant::run(args),
        Command::Completions(args) => completions::run(args),
        Command::New(args) => new::run(args),
    }
}

/// Whether the error is a write to a stdout nobody reads any more. As ripgrep does, that
/// ends the command quietly with success: Rust ignores SIGPIPE, so a closed pipe arrives
/// as this error rather than the signal C tools die of silently; and keeping SIGPIPE
/// ignored lets `serve` outlive whoever stopped reading its stdout.
pub fn broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
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

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// Every argument of every subcommand, as `qhost SUBCOMMAND... ARG`, with the argument.
    fn arguments() -> Vec<(String, clap::Arg)> {
        fn walk(command: &clap::Command, path: String, found: &mut Vec<(String, clap::Arg)>) {
            for arg in command.get_arguments() {
                found.push((format!("{path} {}", arg.get_id()), arg.clone()));
            }
            for sub in command.get_subcommands() {
                walk(sub, format!("{path} {}", sub.get_name()), found);
            }
        }
        let mut found = Vec::new();
        walk(&Cli::command(), "qhost".to_owned(), &mut found);
        found
    }

    #[test]
    fn every_argument_says_what_it_is_for() {
        let bare: Vec<String> = arguments()
            .into_iter()
            .filter(|(_, arg)| arg.get_help().is_none() && arg.get_long_help().is_none())
            .map(|(path, _)| path)
            .collect();
        assert!(bare.is_empty(), "arguments without help: {bare:?}");
    }

    #[test]
    fn every_serve_setting_says_its_default() {
        let silent: Vec<String> = arguments()
            .into_iter()
            .filter(|(path, arg)| {
                path.starts_with("qhost serve ") && arg.get_action().takes_values()
            })
            .filter(|(_, arg)| {
                let help = arg.get_long_help().or(arg.get_help());
                arg.get_default_values().is_empty()
                    && !help.is_some_and(|h| h.to_string().contains("default"))
            })
            .map(|(path, _)| path)
            .collect();
        assert!(
            silent.is_empty(),
            "serve settings without their default: {silent:?}"
        );
    }
}
