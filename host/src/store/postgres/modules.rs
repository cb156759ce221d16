//! Modules: the WebAssembly components tasks run, stored by digest.

use deadpool_postgres::GenericClient;

use super::cached::Cached;
use super::{Commit, PostgresStore, digest_of, not_found, pg};
use crate::runtime::Producers;
use crate::store::*;

/// Stores a module, or names and tags the one stored already. A name given joins its
/// names, moved from the module it named before if another.
pub(super) async fn put(
    store: &PostgresStore,
    bytes: Vec<u8>,
    name: Option<String>,
    tag: Option<String>,
    now: Micros,
) -> StoreResult<ModuleAdded> {
    let digest = Digest::of(&bytes);
    let hex = digest.to_hex();
    let size = bytes.len() as i64;
    let now = store.db_time(now);
    let producers = Producers::of(&bytes);
    transaction!(store, Commit::Durable, |tx| {
        let row = tx
            .row(
                include_str!("sql/module_put.sql"),
                &[
                    &hex,
                    &name,
                    &tag,
                    &size,
                    &bytes,
                    &now,
                    &producers.languages,
                    &producers.processed_by,
                ],
            )
            .await?;
        let name_moved_from = match &name {
            Some(name) => give_name(tx, name, &hex, now).await?,
            None => None,
        };
        // The shown name as it is after the name was given.
        let shown = tx
            .row("SELECT name FROM modules WHERE digest = $1", &[&hex])
            .await?;
        Ok(ModuleAdded {
            module: ModuleInfo {
                digest,
                name: shown.get(0),
                names: names_of(tx, &hex).await?,
                tag: row.get(1),
                size: size as u64,
                added_at: row.get(2),
                languages: Some(producers.languages.clone()),
                processed_by: Some(producers.processed_by.clone()),
            },
            name_moved_from,
        })
    })
}

/// Gives `name` to the module `hex`; returns the module it named until now, if another.
async fn give_name(
    tx: &impl GenericClient,
    name: &str,
    hex: &str,
    now: Micros,
) -> StoreResult<Option<Digest>> {
    let before: Option<String> = tx
        .row_opt(
            "SELECT digest FROM module_names WHERE name = $1 FOR UPDATE",
            &[&name],
        )
        .await?
        .map(|r| r.get(0));
    tx.run(
        include_str!("sql/module_name_give.sql"),
        &[&name, &hex, &now],
    )
    .await?;
    match before {
        Some(other) if other != hex => {
            shown_name(tx, &other).await?;
            Ok(Some(digest_of(&other)))
        }
        _ => Ok(None),
    }
}

/// Sets the name the module `hex` is shown with after its names changed.
async fn shown_name(tx: &impl GenericClient, hex: &str) -> StoreResult<()> {
    tx.run(include_str!("sql/module_name_shown.sql"), &[&hex])
        .await?;
    Ok(())
}

/// The names of the module `hex`, in the order they were given.
async fn names_of(tx: &impl GenericClient, hex: &str) -> StoreResult<Vec<String>> {
    let rows = tx
        .rows(
            "SELECT name FROM module_names WHERE digest = $1 ORDER BY named_at, name",
            &[&hex],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Removes a name; returns the module it named, which keeps its other names.
pub(super) async fn unname(store: &PostgresStore, name: String) -> StoreResult<Digest> {
    transaction!(store, Commit::Durable, |tx| {
        let hex: String = tx
            .row_opt(
                "DELETE FROM module_names WHERE name = $1 RETURNING digest",
                &[&name],
            )
            .await?
            .map(|r| r.get(0))
            .ok_or_else(|| not_found("module name", &name))?;
        shown_name(tx, &hex).await?;
        Ok(digest_of(&hex))
    })
}

pub(super) async fn bytes(store: &PostgresStore, digest: Digest) -> StoreResult<Vec<u8>> {
    let client = store.client(Commit::Durable).await?;
    client
        .row_opt(
            "SELECT bytes FROM modules WHERE digest = $1",
            &[&digest.to_hex()],
        )
        .await?
        .map(|r| r.get(0))
        .ok_or_else(|| not_found("module", digest))
}

pub(super) async fn list(store: &PostgresStore) -> StoreResult<Vec<ModuleInfo>> {
    let client = store.client(Commit::Durable).await?;
    let rows = client
        .rows(
            "SELECT digest, name, tag, size, added_at, languages, processed_by FROM modules \
             ORDER BY added_at, digest",
            &[],
        )
        .await?;
    let names = client
        .rows(
            "SELECT digest, name FROM module_names ORDER BY named_at, name",
            &[],
        )
        .await?;
    let mut by_digest: std::collections::HashMap<String, Vec<String>> = Default::default();
    for r in &names {
        by_digest.entry(r.get(0)).or_default().push(r.get(1));
    }
    Ok(rows
        .iter()
        .map(|r| {
            let hex: String = r.get(0);
            ModuleInfo {
                names: by_digest.remove(&hex).unwrap_or_default(),
                digest: digest_of(&hex),
                name: r.get(1),
                tag: r.get(2),
                size: r.get::<_, i64>(3) as u64,
                added_at: r.get(4),
                languages: r.get(5),
                processed_by: r.get(6),
            }
        })
        .collect())
}

/// Deletes a module no task that has not ended uses (state < 3: waiting, ready or claimed).
pub(super) async fn delete(store: &PostgresStore, digest: Digest) -> StoreResult<()> {
    let hex = digest.to_hex();
    transaction!(store, Commit::Durable, |tx| {
        // Locks the module first, so that no submission can start using it meanwhile.
        let exists = tx
            .row_opt(
                "SELECT 1 FROM modules WHERE digest = $1 FOR UPDATE",
                &[&hex],
            )
            .await?;
        if exists.is_none() {
            return Err(not_found("module", &hex));
        }
        let in_use: i64 = tx
            .row(
                "SELECT COUNT(*) FROM tasks WHERE module = $1 AND state < 3",
                &[&hex],
            )
            .await?
            .get(0);
        if in_use > 0 {
            return Err(errors::module_in_use(&hex, in_use));
        }
        tx.run("DELETE FROM module_names WHERE digest = $1", &[&hex])
            .await?;
        tx.run("DELETE FROM modules WHERE digest = $1", &[&hex])
            .await?;
        Ok(())
    })
}

/// The modules that `names` name, in one prepared statement.
pub(super) async fn lookup(
    store: &PostgresStore,
    names: Vec<String>,
) -> StoreResult<Vec<(String, Digest)>> {
    let client = store.client(Commit::Durable).await?;
    let stmt = client
        .prepare_cached("SELECT name, digest FROM module_names WHERE name = ANY($1)")
        .await
        .map_err(pg)?;
    let rows = client.query(&stmt, &[&names]).await.map_err(pg)?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), digest_of(r.get::<_, &str>(1))))
        .collect())
}
