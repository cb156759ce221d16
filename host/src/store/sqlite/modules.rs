//! Modules: the WebAssembly components tasks run, stored under their digests.

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::{digest_of, internal, not_found};
use crate::runtime::Producers;
use crate::store::*;

/// Stores a module, or gives the one stored already a new name or tag.
pub(super) fn put(
    tx: &Transaction<'_>,
    digest: Digest,
    bytes: Vec<u8>,
    name: Option<String>,
    tag: Option<String>,
    now: Micros,
) -> StoreResult<ModuleInfo> {
    let size = bytes.len() as u64;
    let producers = Producers::of(&bytes);
    let json = |list: &Vec<String>| serde_json::to_string(list).expect("a list of text");
    tx.execute(
        include_str!("sql/module_put.sql"),
        params![
            digest.to_hex(),
            name,
            tag,
            size,
            bytes,
            now,
            json(&producers.languages),
            json(&producers.processed_by)
        ],
    )
    .map_err(internal)?;
    tx.query_row(
        "SELECT name, tag, added_at FROM modules WHERE digest = ?",
        [digest.to_hex()],
        |r| {
            Ok(ModuleInfo {
                digest,
                name: r.get(0)?,
                tag: r.get(1)?,
                size,
                added_at: r.get(2)?,
                languages: Some(producers.languages.clone()),
                processed_by: Some(producers.processed_by.clone()),
            })
        },
    )
    .map_err(internal)
}

/// A list stored as a JSON array of text; none when nothing was stored.
fn text_list(json: Option<String>) -> Option<Vec<String>> {
    json.and_then(|json| serde_json::from_str(&json).ok())
}

pub(super) fn bytes(conn: &Connection, digest: Digest) -> StoreResult<Vec<u8>> {
    conn.query_row(
        "SELECT bytes FROM modules WHERE digest = ?",
        [digest.to_hex()],
        |r| r.get(0),
    )
    .optional()
    .map_err(internal)?
    .ok_or_else(|| not_found("module", digest))
}

pub(super) fn list(conn: &Connection) -> StoreResult<Vec<ModuleInfo>> {
    let mut stmt = conn
        .prepare(
            "SELECT digest, name, tag, size, added_at, languages, processed_by FROM modules \
             ORDER BY added_at, digest",
        )
        .map_err(internal)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(ModuleInfo {
                digest: digest_of(r.get(0)?),
                name: r.get(1)?,
                tag: r.get(2)?,
                size: r.get(3)?,
                added_at: r.get(4)?,
                languages: text_list(r.get(5)?),
                processed_by: text_list(r.get(6)?),
            })
        })
        .map_err(internal)?;
    rows.collect::<Result<_, _>>().map_err(internal)
}

/// Deletes a module that no task still to end uses.
pub(super) fn delete(tx: &Transaction<'_>, digest: Digest) -> StoreResult<()> {
    let hex = digest.to_hex();
    // State below 3: not ended.
    let in_use: i64 = tx
        .query_row(
            "SELECT COUNT(*) FROM tasks WHERE module = ? AND state < 3",
            [&hex],
            |r| r.get(0),
        )
        .map_err(internal)?;
    if in_use > 0 {
        return Err(errors::module_in_use(&hex, in_use));
    }
    match tx
        .execute("DELETE FROM modules WHERE digest = ?", [&hex])
        .map_err(internal)?
    {
        0 => Err(not_found("module", hex)),
        _ => Ok(()),
    }
}

/// Whether a module is stored under `digest` (hex).
pub(super) fn exists(tx: &Transaction<'_>, digest: &str) -> StoreResult<bool> {
    tx.prepare_cached("SELECT 1 FROM modules WHERE digest = ?")
        .map_err(internal)?
        .exists([digest])
        .map_err(internal)
}
