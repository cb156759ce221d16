//! A transaction whose `BEGIN` travels in one pipeline with its first statements, so that
//! opening it costs no round trip of its own (a client's `transaction()` waits for the
//! server's answer to `BEGIN` before it sends anything else).
//!
//! It ends by an explicit commit or rollback, after which its connection goes back to the
//! pool. Dropped while still open (its future cancelled), it closes its connection instead,
//! which ends the transaction on the server, rather than hand a pool a connection in the
//! middle of one.

use deadpool_postgres::Object;

pub(crate) struct OpenTx {
    /// `None` once the transaction has ended and the connection went back to the pool.
    client: Option<Object>,
}

impl OpenTx {
    pub(crate) fn new(client: Object) -> Self {
        Self {
            client: Some(client),
        }
    }

    /// The connection, for the transaction's statements.
    pub(crate) fn client(&self) -> &Object {
        self.client
            .as_ref()
            .expect("a transaction used after it ended")
    }

    /// Sends `BEGIN` on its first poll, before awaiting the answer: poll it before the
    /// future that sends the transaction's statements, and the server gets `BEGIN` first
    /// and runs them inside the transaction, in the order sent.
    pub(crate) async fn begin(&self) -> Result<(), tokio_postgres::Error> {
        self.client().batch_execute("BEGIN").await
    }

    pub(crate) async fn commit(mut self) -> Result<(), tokio_postgres::Error> {
        self.client().batch_execute("COMMIT").await?;
        self.client.take();
        Ok(())
    }

    pub(crate) async fn rollback(mut self) {
        if self.client().batch_execute("ROLLBACK").await.is_ok() {
            self.client.take();
        }
    }
}

impl Drop for OpenTx {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            // Detached from the pool, the connection closes when dropped.
            drop(Object::take(client));
        }
    }
}
