//! Which of the writer's writes a claim has seen.
//!
//! A write that ends tasks may make work claimable: the claim loop claims after it, unless
//! a claim already saw it. The writer numbers its writes; a claim that starts after write
//! `n` is committed sees writes up to `n`, and one the writer makes in a write sees those
//! before it. A wake-up for a write a claim already saw (one the claim loop began after
//! the write, or the writer's claim in a later write) is dropped, rather than spent on a
//! claim that finds nothing and leaves no claim standing for the writes to come.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;

#[derive(Default)]
pub(super) struct Writes {
    /// Writes committed, all told.
    count: AtomicU64,
    /// The number of the last write that made work claimable and that no claim in it saw.
    unseen: AtomicU64,
    notify: Notify,
}

impl Writes {
    /// Writes committed so far: a claim that starts now sees them all.
    pub(super) fn count(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }

    /// The writer committed a write; `unseen`: one that may have made work claimable which
    /// no claim in it saw.
    pub(super) fn wrote(&self, unseen: bool) {
        let n = self.count.fetch_add(1, Ordering::SeqCst) + 1;
        if unseen {
            self.unseen.store(n, Ordering::SeqCst);
            self.notify.notify_one();
        }
    }

    /// Waits for a write that a claim which saw writes up to `seen` missed; returns the
    /// number of the last such write.
    pub(super) async fn missed_since(&self, seen: u64) -> u64 {
        loop {
            // A write between the check and the wait leaves a permit: the wait ends at once.
            let notified = self.notify.notified();
            let unseen = self.unseen.load(Ordering::SeqCst);
            if unseen > seen {
                return unseen;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt as _;

    use super::*;

    /// The write a claim that saw `seen` writes is woken for now, if any.
    fn missed(writes: &Writes, seen: u64) -> Option<u64> {
        writes.missed_since(seen).now_or_never()
    }

    #[test]
    fn a_claim_is_woken_only_for_writes_it_did_not_see() {
        let writes = Writes::default();
        assert_eq!(missed(&writes, 0), None, "nothing written");
        writes.wrote(true);
        assert_eq!(
            missed(&writes, 0),
            Some(1),
            "a claim before the write missed it"
        );
        let seen = writes.count();
        assert_eq!(
            missed(&writes, seen),
            None,
            "a claim after the write saw it"
        );
        writes.wrote(false);
        assert_eq!(missed(&writes, seen), None, "a claim in the write saw it");
        writes.wrote(true);
        assert_eq!(missed(&writes, seen), Some(3));
        assert_eq!(missed(&writes, writes.count()), None);
    }

    #[tokio::test]
    async fn a_write_no_claim_saw_wakes_the_waiting_loop() {
        let writes = std::sync::Arc::new(Writes::default());
        let waiter = tokio::spawn({
            let writes = writes.clone();
            async move { writes.missed_since(0).await }
        });
        tokio::task::yield_now().await;
        writes.wrote(true);
        assert_eq!(waiter.await.expect("woken"), 1);
    }
}
