//! Which driver a database URL names, and opening it.

use std::sync::Arc;

use super::{Store, postgres, sqlite};

/// Opens the store a database URL names: `sqlite:PATH` (the embedded default) or
/// `postgres://...` (several nodes sharing one database). `node` names this node.
pub async fn open(url: &str, node: &str) -> anyhow::Result<Arc<dyn Store>> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Arc::new(postgres::PostgresStore::connect(url, node).await?))
    } else if let Some(path) = url.strip_prefix("sqlite:") {
        let path = path.strip_prefix("//").unwrap_or(path);
        anyhow::ensure!(!path.is_empty(), "the database URL {url:?} names no file");
        Ok(Arc::new(sqlite::SqliteStore::open(std::path::Path::new(
            path,
        ))?))
    } else {
        anyhow::bail!(
            "the database URL {:?} is not supported: use sqlite:PATH or postgres://USER@HOST/DB",
            postgres::redact(url)
        )
    }
}
