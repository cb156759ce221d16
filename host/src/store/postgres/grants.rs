//! What a batch was granted when opened: the origins its tasks may reach over HTTP, and
//! the settings they read.

use deadpool_postgres::GenericClient;

use super::{Commit, PostgresStore, pg};
use crate::store::*;

/// Keeps the grant of the batch `batch`, opened in `tx`; nothing for an empty grant.
pub(super) async fn insert(
    tx: &impl GenericClient,
    batch: BatchId,
    spec: &BatchSpec,
) -> StoreResult<()> {
    if spec.allow_http.is_empty() && spec.settings.is_empty() {
        return Ok(());
    }
    let allow_http = serde_json::to_string(&spec.allow_http).expect("origins serialize");
    let settings = serde_json::to_string(&spec.settings).expect("settings serialize");
    let has_secret = spec.settings.iter().any(|s| s.secret);
    tx.execute(
        include_str!("sql/grant_insert.sql"),
        &[&batch, &allow_http, &settings, &has_secret],
    )
    .await
    .map_err(pg)?;
    Ok(())
}

/// What `batch` was granted; nothing when it was granted nothing or does not exist.
pub(super) async fn get(store: &PostgresStore, batch: BatchId) -> StoreResult<Grant> {
    let client = store.client(Commit::Durable).await?;
    let row = client
        .query_opt(include_str!("sql/grant_get.sql"), &[&batch])
        .await
        .map_err(pg)?;
    Ok(row
        .map(|r| Grant {
            allow_http: serde_json::from_str(r.get::<_, &str>(0)).unwrap_or_default(),
            settings: serde_json::from_str(r.get::<_, &str>(1)).unwrap_or_default(),
        })
        .unwrap_or_default())
}

/// One secret setting, sealed as stored, if any batch holds one.
pub(super) async fn secret_sample(store: &PostgresStore) -> StoreResult<Option<Setting>> {
    let client = store.client(Commit::Durable).await?;
    let row = client
        .query_opt(include_str!("sql/grant_secret_sample.sql"), &[])
        .await
        .map_err(pg)?;
    Ok(row.and_then(|r| {
        serde_json::from_str::<Vec<Setting>>(r.get::<_, &str>(0))
            .unwrap_or_default()
            .into_iter()
            .find(|s| s.secret)
    }))
}
