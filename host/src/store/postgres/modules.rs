//! Modules: the WebAssembly components tasks run, stored by digest.

use super::{Commit, PostgresStore, digest_of, not_found, pg};
use crate::runtime::Producers;
use crate::store::*;

pub(super) async fn put(
    store: &PostgresStore,
    bytes: Vec<u8>,
    name: Option<String>,
    tag: Option<String>,
    now: Micros,
) -> StoreResult<ModuleInfo> {
    let digest = Digest::of(&bytes);
    let hex = digest.to_hex();
    let size = bytes.len() as i64;
    let now = store.db_time(now);
    let producers = Producers::of(&bytes);
    transaction!(store, Commit::Durable, |tx| {
        let row = tx
            .query_one(
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
            .await
            .map_err(pg)?;
        Ok(ModuleInfo {
            digest,
            name: row.get(0),
            tag: row.get(1),
            size: size as u64,
            added_at: row.get(2),
            languages: Some(producers.languages.clone()),
            processed_by: Some(producers.processed_by.clone()),
        })
    })
}

pub(super) async fn bytes(store: &PostgresStore, digest: Digest) -> StoreResult<Vec<u8>> {
    let client = store.client(Commit::Durable).await?;
    client
        .query_opt(
            "SELECT bytes FROM modules WHERE digest = $1",
            &[&digest.to_hex()],
        )
        .await
        .map_err(pg)?
        .map(|r| r.get(0))
        .ok_or_else(|| not_found("module", digest))
}

pub(super) async fn list(store: &PostgresStore) -> StoreResult<Vec<ModuleInfo>> {
    let client = store.client(Commit::Durable).await?;
    let rows = client
        .query(
            "SELECT digest, name, tag, size, added_at, languages, processed_by FROM modules \
             ORDER BY added_at, digest",
            &[],
        )
        .await
        .map_err(pg)?;
    Ok(rows
        .iter()
        .map(|r| ModuleInfo {
            digest: digest_of(r.get(0)),
            name: r.get(1),
            tag: r.get(2),
            size: r.get::<_, i64>(3) as u64,
            added_at: r.get(4),
            languages: r.get(5),
            processed_by: r.get(6),
        })
        .collect())
}

/// Deletes a module no task that has not ended uses (state < 3: waiting, ready or claimed).
pub(super) async fn delete(store: &PostgresStore, digest: Digest) -> StoreResult<()> {
    let hex = digest.to_hex();
    transaction!(store, Commit::Durable, |tx| {
        // Locks the module first, so that no submission can start using it meanwhile.
        let exists = tx
            .query_opt(
                "SELECT 1 FROM modules WHERE digest = $1 FOR UPDATE",
                &[&hex],
            )
            .await
            .map_err(pg)?;
        if exists.is_none() {
            return Err(not_found("module", &hex));
        }
        let in_use: i64 = tx
            .query_one(
                "SELECT COUNT(*) FROM tasks WHERE module = $1 AND state < 3",
                &[&hex],
            )
            .await
            .map_err(pg)?
            .get(0);
        if in_use > 0 {
            return Err(errors::module_in_use(&hex, in_use));
        }
        tx.execute("DELETE FROM modules WHERE digest = $1", &[&hex])
            .await
            .map_err(pg)?;
        Ok(())
    })
}
