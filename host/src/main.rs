//! The `qhost` binary: parses the command line, runs the subcommand, and turns an error
//! into its message chain and an exit code.

use std::process::ExitCode;

use clap::Parser;

/// The static build's allocator: musl's own takes a lock that threads allocating at once
/// wait on, which halves the drain of `qhost bench`; glibc's is kept where it is there.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    qhost::cli::quiet_library_backtraces();
    let cli = qhost::cli::Cli::parse();
    match qhost::cli::run(cli) {
        Ok(code) => code,
        Err(err) if qhost::cli::broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            // Not eprintln!, which panics on a closed stderr.
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "error: {err:#}");
            ExitCode::from(qhost::cli::exit::code(&err))
        }
    }
}
