//! Modules: the WebAssembly components tasks run, stored under their digests.

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::{digest_of, internal, not_found};
use crate::runtime::Producers;
use crate::store::*;

/// Stores a module, or gives the one stored already a new name or tag. A name given
/// joins its names, moved from the module it named before if another.
pub(super) fn put(
    tx: &Transaction<'_>,
    digest: Digest,
    bytes: Vec<u8>,
    name: Option<String>,
    tag: Option<String>,
    now: Micros,
) -> StoreResult<ModuleAdded> {
    let size = bytes.len() as u64;
    let hex = digest.to_hex();
    let producers = Producers::of(&bytes);
    let json = |list: &Vec<String>| serde_json::to_string(list).expect("a list of text");
    tx.execute(
        include_str!("sql/module_put.sql"),
        params![
            hex,
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
    let name_moved_from = match &name {
        Some(name) => give_name(tx, name, &hex, now)?,
        None => None,
    };
    let module = tx
        .query_row(
            "SELECT name, tag, added_at FROM modules WHERE digest = ?",
            [&hex],
            |r| {
                Ok(ModuleInfo {
                    digest,
                    name: r.get(0)?,
                    names: Vec::new(),
                    tag: r.get(1)?,
                    size,
                    added_at: r.get(2)?,
                    languages: Some(producers.languages.clone()),
                    processed_by: Some(producers.processed_by.clone()),
                })
            },
        )
        .map_err(internal)?;
    let names = names_of(tx, &hex)?;
    Ok(ModuleAdded {
        module: ModuleInfo { names, ..module },
        name_moved_from,
    })
}

/// Gives `name` to the module `hex`; returns the module it named until now, if another.
fn give_name(
    tx: &Transaction<'_>,
    name: &str,
    hex: &str,
    now: Micros,
) -> StoreResult<Option<Digest>> {
    let before: Option<String> = tx
        .query_row(
            "SELECT digest FROM module_names WHERE name = ?",
            [name],
            |r| r.get(0),
        )
        .optional()
        .map_err(internal)?;
    tx.execute(
        include_str!("sql/module_name_give.sql"),
        params![name, hex, now],
    )
    .map_err(internal)?;
    match before {
        Some(other) if other != hex => {
            shown_name(tx, &other)?;
            Ok(Some(digest_of(other)))
        }
        _ => Ok(None),
    }
}

/// Sets the name the module `hex` is shown with after its names changed.
fn shown_name(tx: &Transaction<'_>, hex: &str) -> StoreResult<()> {
    tx.execute(include_str!("sql/module_name_shown.sql"), [hex])
        .map_err(internal)?;
    Ok(())
}

/// The names of the module `hex`, in the order they were given.
fn names_of(conn: &Connection, hex: &str) -> StoreResult<Vec<String>> {
    let mut stmt = conn
        .prepare_cached("SELECT name FROM module_names WHERE digest = ? ORDER BY named_at, name")
        .map_err(internal)?;
    let rows = stmt.query_map([hex], |r| r.get(0)).map_err(internal)?;
    rows.collect::<Result<_, _>>().map_err(internal)
}

/// Removes a name; returns the module it named, which keeps its other names.
pub(super) fn unname(tx: &Transaction<'_>, name: &str) -> StoreResult<Digest> {
    let hex: String = tx
        .query_row(
            "DELETE FROM module_names WHERE name = ? RETURNING digest",
            [name],
            |r| r.get(0),
        )
        .optional()
        .map_err(internal)?
        .ok_or_else(|| not_found("module name", name))?;
    shown_name(tx, &hex)?;
    Ok(digest_of(hex))
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
                names: Vec::new(),
                tag: r.get(2)?,
                size: r.get(3)?,
                added_at: r.get(4)?,
                languages: text_list(r.get(5)?),
                processed_by: text_list(r.get(6)?),
            })
        })
        .map_err(internal)?;
    let mut modules: Vec<ModuleInfo> = rows.collect::<Result<_, _>>().map_err(internal)?;
    let mut stmt = conn
        .prepare("SELECT digest, name FROM module_names ORDER BY named_at, name")
        .map_err(internal)?;
    let names = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .map_err(internal)?;
    let mut by_digest: std::collections::HashMap<String, Vec<String>> = Default::default();
    for row in names {
        let (digest, name) = row.map_err(internal)?;
        by_digest.entry(digest).or_default().push(name);
    }
    for module in &mut modules {
        module.names = by_digest
            .remove(&module.digest.to_hex())
            .unwrap_or_default();
    }
    Ok(modules)
}

/// Deletes a module that no task still to end uses, with its names.
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
    tx.execute("DELETE FROM module_names WHERE digest = ?", [&hex])
        .map_err(internal)?;
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

/// The modules that `names` name, each by its key in `module_names`.
pub(super) fn lookup(conn: &Connection, names: Vec<String>) -> StoreResult<Vec<(String, Digest)>> {
    let mut stmt = conn
        .prepare_cached("SELECT digest FROM module_names WHERE name = ?")
        .map_err(internal)?;
    let mut found = Vec::with_capacity(names.len());
    for name in names {
        let digest: Option<String> = stmt
            .query_row([&name], |r| r.get(0))
            .optional()
            .map_err(internal)?;
        if let Some(digest) = digest {
            found.push((name, digest_of(digest)));
        }
    }
    Ok(found)
}
