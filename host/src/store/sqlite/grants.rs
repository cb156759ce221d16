//! What a batch was granted when opened: the origins its tasks may reach over HTTP, and
//! the settings they read.

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::internal;
use crate::store::*;

/// Keeps the grant of the batch `batch`, opened in `tx`; nothing for an empty grant.
pub(super) fn insert(tx: &Transaction<'_>, batch: BatchId, spec: &BatchSpec) -> StoreResult<()> {
    let Some(kept) = Grant::stored(&spec.allow_http, &spec.settings) else {
        return Ok(());
    };
    tx.prepare_cached(include_str!("sql/grant_insert.sql"))
        .map_err(internal)?
        .execute(params![
            batch,
            kept.allow_http,
            kept.settings,
            kept.has_secret
        ])
        .map_err(internal)?;
    Ok(())
}

/// What `batch` was granted; nothing when it was granted nothing or does not exist.
pub(super) fn get(conn: &Connection, batch: BatchId) -> StoreResult<Grant> {
    let row: Option<(String, String)> = conn
        .prepare_cached(include_str!("sql/grant_get.sql"))
        .map_err(internal)?
        .query_row([batch], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .map_err(internal)?;
    Ok(row
        .map(|(allow_http, settings)| Grant::from_stored(&allow_http, &settings))
        .unwrap_or_default())
}

/// One secret setting, sealed as stored, if any batch holds one.
pub(super) fn secret_sample(conn: &Connection) -> StoreResult<Option<Setting>> {
    let settings: Option<String> = conn
        .prepare_cached(include_str!("sql/grant_secret_sample.sql"))
        .map_err(internal)?
        .query_row([], |r| r.get(0))
        .optional()
        .map_err(internal)?;
    Ok(settings.and_then(|text| first_secret(&text)))
}
