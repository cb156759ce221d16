//! The CPU time an attempt uses: the thread CPU time spent in each poll of its run, which
//! is where its wasm and the host calls it makes execute (wasmtime runs a guest on the
//! thread that polls it). Time waiting (a sleep, a slow upstream, a busy executor) is not
//! counted, so a tenant's CPU usage is what its code burned, not the slot time it held.
//! A run given a cap (what its tenant's budget has left) ends at the first poll that
//! passes it: a guest in a tight loop yields at every epoch tick, so it overshoots by a
//! tick at most.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// The calling thread's CPU time so far.
fn thread_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec for the call to write; the clock id is a constant
    // every Linux and macOS kernel qhost runs on has.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if status != 0 {
        return Duration::ZERO;
    }
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// A future with the CPU time its polls took, which ends with `None` once that passes
/// its cap.
pub(crate) struct Timed<F> {
    inner: Pin<Box<F>>,
    used: Duration,
    cap: Option<Duration>,
}

impl<F: Future> Timed<F> {
    pub(crate) fn new(inner: F, cap: Option<Duration>) -> Self {
        Timed {
            inner: Box::pin(inner),
            used: Duration::ZERO,
            cap,
        }
    }

    /// The CPU time its polls took so far.
    pub(crate) fn used(&self) -> Duration {
        self.used
    }
}

impl<F: Future> Future for Timed<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<F::Output>> {
        let before = thread_cpu();
        let polled = self.inner.as_mut().poll(cx);
        let spent = thread_cpu().saturating_sub(before);
        self.used += spent;
        match polled {
            Poll::Ready(out) => Poll::Ready(Some(out)),
            Poll::Pending if self.cap.is_some_and(|cap| self.used >= cap) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counts_what_polls_burn_and_not_what_they_wait() {
        // Burns 30 ms of CPU, however long a loaded machine takes to give it.
        let mut spin = Timed::new(
            async {
                let start = thread_cpu();
                while thread_cpu() - start < Duration::from_millis(30) {
                    std::hint::black_box(());
                }
            },
            None,
        );
        (&mut spin).await;
        assert!(
            spin.used() >= Duration::from_millis(30),
            "{:?}",
            spin.used()
        );

        let mut sleep = Timed::new(tokio::time::sleep(Duration::from_millis(50)), None);
        (&mut sleep).await;
        assert!(
            sleep.used() < Duration::from_millis(10),
            "{:?}",
            sleep.used()
        );
    }

    #[tokio::test]
    async fn ends_at_the_first_poll_past_its_cap() {
        // Spins 5 ms of CPU per poll, for ever.
        let spin = std::future::poll_fn(|cx| {
            let start = thread_cpu();
            while thread_cpu() - start < Duration::from_millis(5) {
                std::hint::black_box(());
            }
            cx.waker().wake_by_ref();
            Poll::<()>::Pending
        });
        let mut capped = Timed::new(spin, Some(Duration::from_millis(20)));
        assert_eq!((&mut capped).await, None);
        let used = capped.used();
        assert!(
            used >= Duration::from_millis(20) && used < Duration::from_millis(40),
            "{used:?}"
        );
        // A run that ends within its cap ends as it did.
        let quick = Timed::new(async { 7 }, Some(Duration::from_millis(20)));
        assert_eq!(quick.await, Some(7));
    }
}
