//! A consistent copy of the database while the node runs. The node holds the file with
//! an exclusive lock, so no other process can read it: the copy is made on the store's
//! own connection with `VACUUM INTO`, which reads one snapshot of the database (with
//! what the write-ahead log holds) and writes it compacted to a new file. Writes wait on
//! the connection meanwhile.

use std::path::Path;

use anyhow::Context as _;
use rusqlite::Connection;

use super::super::{StoreError, StoreResult};

/// Copies the database into a new file in `dir` (beside the database, on the same disk),
/// and returns it open and already unlinked: nothing is left behind once it is read,
/// whatever happens to the reader.
pub(super) fn copy(conn: &Connection, dir: &Path) -> StoreResult<std::fs::File> {
    let file = tempfile::Builder::new()
        .prefix(".qhost-backup-")
        .suffix(".db")
        .tempfile_in(dir)
        .with_context(|| format!("creating a file for the backup in {}", dir.display()))?;
    let path = file.path().to_str().ok_or_else(|| {
        StoreError::Internal(anyhow::anyhow!(
            "the backup's path {} is not UTF-8",
            file.path().display()
        ))
    })?;
    // The file exists and is empty, which VACUUM INTO accepts.
    conn.execute("VACUUM INTO ?1", [path])
        .with_context(|| format!("copying the database into {path}"))?;
    // Its name goes; the open handle keeps its content until it closes.
    Ok(file.into_file())
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    #[test]
    fn the_copy_holds_what_was_committed_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let conn = super::super::schema::open(&dir.path().join("qhost.db")).unwrap();
        conn.execute_batch("CREATE TABLE kept(x); INSERT INTO kept VALUES (42);")
            .unwrap();
        let mut file = super::copy(&conn, dir.path()).unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.starts_with(".qhost-backup"))
            .collect();
        assert!(names.is_empty(), "left behind: {names:?}");
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).unwrap();
        let copy = dir.path().join("copy.db");
        std::fs::write(&copy, &bytes).unwrap();
        let read = rusqlite::Connection::open(&copy).unwrap();
        let x: i64 = read
            .query_row("SELECT x FROM kept", [], |row| row.get(0))
            .unwrap();
        assert_eq!(x, 42);
    }
}
