//! `qhost backup --out FILE`: a consistent copy of a running server's SQLite store
//! (`GET /v1/backup`), written whole or not at all: into a file beside FILE, synced, and
//! only then given FILE's name, so a download cut short leaves nothing that looks like a
//! backup. The copy is a SQLite database that `qhost serve` opens as its `qhost.db`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use super::client::{Client, ConnectArgs};

#[derive(Debug, Args)]
pub struct BackupArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// The file to write; it must not exist yet. Readable by its owner only: the store
    /// holds every task's input and output.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

/// The first bytes of every SQLite database file.
const SQLITE_HEADER: &[u8] = b"SQLite format 3\0";

pub fn run(args: BackupArgs) -> anyhow::Result<ExitCode> {
    let out = &args.out;
    anyhow::ensure!(
        !out.exists(),
        "--out {}: the file exists; remove it or name a new one",
        out.display()
    );
    let dir = match out.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let client = Client::new(&args.connect)?;
    let (length, mut body) = client.download("/v1/backup")?;
    // Created readable by its owner only.
    let mut file = tempfile::Builder::new()
        .prefix(".qhost-backup-")
        .tempfile_in(dir)
        .with_context(|| {
            format!(
                "--out {}: creating a file in {}",
                out.display(),
                dir.display()
            )
        })?;
    let written = std::io::copy(&mut body, &mut file)
        .with_context(|| format!("downloading the backup into {}", out.display()))?;
    if let Some(length) = length {
        anyhow::ensure!(
            written == length,
            "the download ended after {written} of {length} bytes; {} was not written: run \
             the backup again",
            out.display()
        );
    }
    let mut header = [0u8; SQLITE_HEADER.len()];
    {
        use std::io::{Read as _, Seek as _};
        let handle = file.as_file_mut();
        handle.rewind()?;
        let read = handle.read(&mut header)?;
        anyhow::ensure!(
            read == header.len() && header == SQLITE_HEADER,
            "the server's answer is not a SQLite database ({written} bytes); {} was not written",
            out.display()
        );
    }
    file.as_file()
        .sync_all()
        .context("syncing the backup to disk")?;
    file.persist_noclobber(out)
        .map_err(|e| e.error)
        .with_context(|| format!("--out {}: naming the backup", out.display()))?;
    // The new name is durable once the directory is synced.
    if let Ok(dir) = std::fs::File::open(dir) {
        let _ = dir.sync_all();
    }
    outln!("backed up the store to {} ({written} bytes)", out.display())?;
    Ok(ExitCode::SUCCESS)
}
