//! Files only their owner may read: the admin token, the secret key, a SQLite database.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::Context;

/// Writes `line` to a new file at `path`, readable by its owner only; fails if the file
/// exists.
pub fn create(path: &Path, line: &str) -> anyhow::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    writeln!(file, "{line}").with_context(|| format!("writing {}", path.display()))
}

/// Makes the file at `path` (created empty if missing) readable by its owner only,
/// warning when it was open to others.
pub fn keep_private(path: &Path) -> anyhow::Result<()> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    let mode = file.metadata()?.permissions().mode() & 0o777;
    if mode != 0o600 {
        tracing::warn!(
            "{} was open to others (mode {mode:04o}): made it readable by its owner only",
            path.display()
        );
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("making {} private", path.display()))?;
    }
    Ok(())
}
