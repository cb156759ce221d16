//! Statements run through the connection's statement cache, as every statement of this
//! driver is (`prepared.rs` holds the driver to it): `tx.run(SQL, &[..])` in place of
//! preparing, then executing, each with its error made a store error.

use std::future::Future;

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::pg;
use crate::store::StoreResult;

type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

pub(super) trait Cached: GenericClient + Sync {
    /// Executes `sql`; the rows it changed.
    fn run(&self, sql: &str, params: Params<'_>) -> impl Future<Output = StoreResult<u64>> + Send {
        async move {
            let statement = self.prepare_cached(sql).await.map_err(pg)?;
            self.execute(&statement, params).await.map_err(pg)
        }
    }

    /// Every row `sql` returns.
    fn rows(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> impl Future<Output = StoreResult<Vec<Row>>> + Send {
        async move {
            let statement = self.prepare_cached(sql).await.map_err(pg)?;
            self.query(&statement, params).await.map_err(pg)
        }
    }

    /// The one row `sql` returns; an error if it returns none or several.
    fn row(&self, sql: &str, params: Params<'_>) -> impl Future<Output = StoreResult<Row>> + Send {
        async move {
            let statement = self.prepare_cached(sql).await.map_err(pg)?;
            self.query_one(&statement, params).await.map_err(pg)
        }
    }

    /// The row `sql` returns, if any; an error if it returns several.
    fn row_opt(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> impl Future<Output = StoreResult<Option<Row>>> + Send {
        async move {
            let statement = self.prepare_cached(sql).await.map_err(pg)?;
            self.query_opt(&statement, params).await.map_err(pg)
        }
    }
}

impl<C: GenericClient + Sync> Cached for C {}
