//! What a batch was granted when opened: the origins its tasks may reach over HTTP, and
//! the settings they read.

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::internal;
use crate::store::*;

/// Keeps the grant of the batch `batch`, opened in `tx`; nothing for an empty grant.
pub(super) fn insert(tx: &Transaction<'_>, batch: BatchId, spec: &BatchSpec) -> StoreResult<()> {
    if spec.allow_http.is_empty() && spec.settings.is_empty() {
        return Ok(());
    }
    let allow_http = serde_json::to_string(&spec.allow_http).expect("origins serialize");
    let settings = serde_json::to_string(&spec.settings).expect("settings serialize");
    let has_secret = spec.settings.iter().any(|s| s.secret);
    tx.prepare_cached(include_str!("sql/grant_insert.sql"))
        .map_err(internal)?
        .execute(params![batch, allow_http, settings, has_secret])
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
        .map(|(allow_http, settings)| Grant {
            allow_http: serde_json::from_str(&allow_http).unwrap_or_default(),
            settings: serde_json::from_str(&settings).unwrap_or_default(),
        })
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
    Ok(settings.and_then(|text| {
        serde_json::from_str::<Vec<Setting>>(&text)
            .unwrap_or_default()
            .into_iter()
            .find(|s| s.secret)
    }))
}
