//! LISTEN/NOTIFY between nodes: what a write tells the others, the listener that hears
//! them, and the [`Signal`]s it turns their messages into.
//!
//! A message is `NODE\nWHAT`, on the channel `qhost:SCHEMA`; WHAT is `w` (work may be
//! claimable), `r` (priorities or limits changed), `c` (a running task's cancellation was
//! asked), `b ID ID ...` (these batches had tasks end) or `s ID ID ...` (these batches had
//! tasks start).

use std::time::Duration;

use deadpool_postgres::GenericClient;
use tokio::sync::broadcast;
use tokio_postgres::{AsyncMessage, NoTls};

use super::{PostgresStore, pg};
use crate::store::{BatchId, CompleteResult, Signal, StoreResult, TaskId};

impl PostgresStore {
    /// Returns once this store hears other nodes' notifications.
    pub async fn wait_listening(&self) {
        let _ = self
            .listening
            .clone()
            .wait_for(|listening| *listening)
            .await;
    }

    /// Queues a notification to the other nodes, sent when the transaction commits.
    pub(super) async fn notify(&self, tx: &impl GenericClient, what: &str) -> StoreResult<()> {
        let payload = format!("{}\n{what}", self.node);
        let stmt = tx
            .prepare_cached("SELECT pg_notify($1, $2)")
            .await
            .map_err(pg)?;
        tx.execute(&stmt, &[&self.channel, &payload])
            .await
            .map_err(pg)?;
        Ok(())
    }

    /// Tells the other nodes what ended attempts changed: which batches had tasks end
    /// (news that also wakes their claim loops: slots and gates opened), or only that
    /// tasks went back to the queue; and that a tenant is held for its spent budget, so
    /// that they hand back what they reserved.
    pub(super) async fn notify_ended(
        &self,
        tx: &impl GenericClient,
        result: &CompleteResult,
    ) -> StoreResult<()> {
        if result.tenant_held {
            self.notify(tx, "r").await?;
        }
        if !result.ended.is_empty() {
            self.notify_batches(tx, &result.ended).await
        } else if result.retried > 0 {
            self.notify(tx, "w").await
        } else {
            Ok(())
        }
    }

    /// Tells the other nodes which batches had tasks end.
    pub(super) async fn notify_batches(
        &self,
        tx: &impl GenericClient,
        ended: &[(TaskId, BatchId)],
    ) -> StoreResult<()> {
        self.notify_ids(tx, 'b', ended.iter().map(|&(_, b)| b).collect())
            .await
    }

    /// Tells the other nodes which batches had tasks start, for their event streams.
    pub(super) async fn notify_started(
        &self,
        tx: &impl GenericClient,
        batches: Vec<BatchId>,
    ) -> StoreResult<()> {
        self.notify_ids(tx, 's', batches).await
    }

    /// Sends `kind` with these batch ids, each once, a few hundred a message.
    async fn notify_ids(
        &self,
        tx: &impl GenericClient,
        kind: char,
        mut batches: Vec<BatchId>,
    ) -> StoreResult<()> {
        batches.sort_unstable();
        batches.dedup();
        for chunk in batches.chunks(400) {
            let ids: Vec<String> = chunk.iter().map(|b| b.to_string()).collect();
            self.notify(tx, &format!("{kind} {}", ids.join(" ")))
                .await?;
        }
        Ok(())
    }
}

/// Listens for the other nodes' notifications on a connection of its own, reconnecting
/// when it drops (and then signalling [`Signal::Resync`]: messages may have been missed).
pub(super) async fn listen(
    config: tokio_postgres::Config,
    channel: String,
    node: String,
    signals: broadcast::Sender<Signal>,
    listening: tokio::sync::watch::Sender<bool>,
) {
    let mut delay = Duration::from_millis(100);
    loop {
        match config.connect(NoTls).await {
            Ok((client, mut connection)) => {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                let driver = tokio::spawn(async move {
                    while let Some(message) =
                        std::future::poll_fn(|cx| connection.poll_message(cx)).await
                    {
                        match message {
                            Ok(AsyncMessage::Notification(n)) => {
                                let _ = tx.send(n.payload().to_owned());
                            }
                            Ok(_) => {}
                            Err(err) => {
                                tracing::warn!("the notification connection failed: {err}");
                                break;
                            }
                        }
                    }
                });
                // A channel is a name, never a parameter: quoted here.
                let quoted = channel.replace('"', "\"\"");
                match client.batch_execute(&format!("LISTEN \"{quoted}\"")).await {
                    Ok(()) => {
                        delay = Duration::from_millis(100);
                        let _ = signals.send(Signal::Resync);
                        listening.send_replace(true);
                        while let Some(payload) = rx.recv().await {
                            if let Some(signal) = parse_signal(&payload, &node) {
                                let _ = signals.send(signal);
                            }
                        }
                    }
                    Err(err) => tracing::warn!("listening for notifications failed: {err}"),
                }
                listening.send_replace(false);
                driver.abort();
            }
            Err(err) => tracing::warn!("connecting for notifications failed: {err}"),
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(5));
    }
}

/// A notification from another node; this node's own are already handled in-process.
fn parse_signal(payload: &str, this_node: &str) -> Option<Signal> {
    let (from, what) = payload.split_once('\n')?;
    if from == this_node {
        return None;
    }
    match what {
        "w" => Some(Signal::Wake),
        "r" => Some(Signal::Reclaim),
        "c" => Some(Signal::Cancel),
        _ => {
            let (kind, ids) = what.split_once(' ')?;
            let ids = ids.split(' ').filter_map(|id| id.parse().ok()).collect();
            match kind {
                "b" => Some(Signal::Batches(ids)),
                "s" => Some(Signal::Started(ids)),
                _ => None,
            }
        }
    }
}
