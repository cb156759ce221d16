//! `qhost health`: whether a server lives (`GET /healthz`) or is ready (`GET /readyz`),
//! for probes with no HTTP client of their own, such as a container image's health check.
//! It exits 0 when the server answers `200`, and 1 otherwise (unreachable, or `503` while
//! it starts): container engines reserve exit code 2.

use std::process::ExitCode;

use clap::Args;

use super::client::{Client, ConnectArgs};

#[derive(Debug, Args)]
pub struct HealthArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Ask whether it is ready (`/readyz`: the store open and migrated, this node
    /// registered) rather than whether it lives (`/healthz`).
    #[arg(long)]
    pub ready: bool,
}

/// The exit code of a server that is not healthy or not ready.
const EXIT_UNHEALTHY: u8 = 1;

pub fn run(args: HealthArgs) -> anyhow::Result<ExitCode> {
    let client = Client::new(&args.connect)?;
    let path = if args.ready { "/readyz" } else { "/healthz" };
    match client.get_bytes(path) {
        Ok(body) => {
            outln!("{}", String::from_utf8_lossy(&body).trim())?;
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            errln!("qhost health: {err:#}");
            Ok(ExitCode::from(EXIT_UNHEALTHY))
        }
    }
}
