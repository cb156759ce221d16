//! What a batch was granted when opened: the origins its tasks may reach over HTTP, and
//! the settings they read.

use deadpool_postgres::GenericClient;

use super::cached::Cached;
use super::{Commit, PostgresStore};
use crate::store::*;

/// Keeps the grant of the batch `batch`, opened in `tx`; nothing for an empty grant.
pub(super) async fn insert(
    tx: &impl GenericClient,
    batch: BatchId,
    spec: &BatchSpec,
) -> StoreResult<()> {
    let Some(kept) = Grant::stored(&spec.allow_http, &spec.settings) else {
        return Ok(());
    };
    tx.run(
        include_str!("sql/grant_insert.sql"),
        &[&batch, &kept.allow_http, &kept.settings, &kept.has_secret],
    )
    .await?;
    Ok(())
}

/// What `batch` was granted; nothing when it was granted nothing or does not exist.
pub(super) async fn get(store: &PostgresStore, batch: BatchId) -> StoreResult<Grant> {
    let client = store.client(Commit::Durable).await?;
    let row = client
        .row_opt(include_str!("sql/grant_get.sql"), &[&batch])
        .await?;
    Ok(row
        .map(|r| Grant::from_stored(r.get(0), r.get(1)))
        .unwrap_or_default())
}

/// One secret setting, sealed as stored, if any batch holds one.
pub(super) async fn secret_sample(store: &PostgresStore) -> StoreResult<Option<Setting>> {
    let client = store.client(Commit::Durable).await?;
    let row = client
        .row_opt(include_str!("sql/grant_secret_sample.sql"), &[])
        .await?;
    Ok(row.and_then(|r| first_secret(r.get(0))))
}
