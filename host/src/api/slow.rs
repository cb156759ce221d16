//! Clients too slow to keep: guards around a connection and around each request body.
//!
//! - A write that waits for the client to read may wait at most `client_timeout`.
//! - A request body may pause for at most `client_timeout`, and must arrive at an average
//!   of at least `body_min_rate` bytes a second once `client_timeout` has passed: a body
//!   sent a byte at a time is cut however regularly the bytes come. Only the time the
//!   server spends waiting on the client counts (not the time a handler leaves the body
//!   unread, waiting for an upload permit).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Bytes;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

/// How slow a client may be.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// The longest pause in sending a body or in reading an answer, and the time a body
    /// has before its average rate counts.
    pub client_timeout: Duration,
    /// The lowest average rate of a body, in bytes a second.
    pub body_min_rate: u64,
}

/// A clock that runs while something waits on the client and fails it after `timeout`;
/// every step forward starts it again.
struct Stall {
    timeout: Duration,
    sleep: Pin<Box<Sleep>>,
    /// Whether `sleep` is running: it is armed when a wait begins.
    armed: bool,
}

impl Stall {
    fn new(timeout: Duration) -> Self {
        Stall {
            timeout,
            sleep: Box::pin(tokio::time::sleep(timeout)),
            armed: false,
        }
    }

    /// Maps a poll of the guarded value: progress disarms the clock, a wait arms it, and a
    /// wait that has lasted `timeout` fails with `timed_out`.
    fn guard<R>(
        &mut self,
        cx: &mut Context<'_>,
        poll: Poll<R>,
        timed_out: impl FnOnce() -> R,
    ) -> Poll<R> {
        if poll.is_ready() {
            self.armed = false;
            return poll;
        }
        if !self.armed {
            self.armed = true;
            let deadline = Instant::now() + self.timeout;
            self.sleep.as_mut().reset(deadline);
        }
        ready!(self.sleep.as_mut().poll(cx));
        Poll::Ready(timed_out())
    }
}

/// The lowest average rate of a body, counted over the time spent waiting on the client.
struct Rate {
    grace: Duration,
    min_rate: u64,
    received: u64,
    /// Time spent waiting on the client so far, up to the last poll.
    waited: Duration,
    /// When the last poll found nothing to read: the wait since counts.
    waiting_since: Option<Instant>,
    sleep: Pin<Box<Sleep>>,
}

impl Rate {
    fn new(pace: Pace) -> Self {
        Rate {
            grace: pace.client_timeout,
            min_rate: pace.body_min_rate.max(1),
            received: 0,
            waited: Duration::ZERO,
            waiting_since: None,
            sleep: Box::pin(tokio::time::sleep(pace.client_timeout)),
        }
    }

    /// The waiting the body has earned: the grace, and a second per `min_rate` bytes.
    fn allowed(&self) -> Duration {
        self.grace + Duration::from_secs_f64(self.received as f64 / self.min_rate as f64)
    }

    /// Counts a poll's result: whether the body is now too slow (and, while it waits, arms
    /// the wake-up for when it would become so).
    fn too_slow(&mut self, cx: &mut Context<'_>, received: Option<u64>) -> bool {
        let now = Instant::now();
        if let Some(since) = self.waiting_since.take() {
            self.waited += now - since;
        }
        if let Some(bytes) = received {
            self.received += bytes;
            return false;
        }
        let allowed = self.allowed();
        if self.waited >= allowed {
            return true;
        }
        self.waiting_since = Some(now);
        self.sleep.as_mut().reset(now + (allowed - self.waited));
        if self.sleep.as_mut().poll(cx).is_ready() {
            self.waited = allowed;
            return true;
        }
        false
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request body read within a [`Pace`].
pub struct PacedBody {
    inner: Incoming,
    stall: Stall,
    rate: Rate,
    min_rate: u64,
}

impl PacedBody {
    pub fn new(inner: Incoming, pace: Pace) -> Self {
        PacedBody {
            inner,
            stall: Stall::new(pace.client_timeout),
            rate: Rate::new(pace),
            min_rate: pace.body_min_rate,
        }
    }
}

impl http_body::Body for PacedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner)
            .poll_frame(cx)
            .map(|frame| frame.map(|r| r.map_err(BoxError::from)));
        let received = match &poll {
            Poll::Ready(Some(Ok(frame))) => Some(frame.data_ref().map_or(0, |d| d.len() as u64)),
            Poll::Ready(_) => Some(0),
            Poll::Pending => None,
        };
        if this.rate.too_slow(cx, received) {
            let rate = this.min_rate;
            return Poll::Ready(Some(Err(format!(
                "the client sent the request body slower than {rate} bytes a second"
            )
            .into())));
        }
        this.stall.guard(cx, poll, || {
            Some(Err("the client stopped sending the request body".into()))
        })
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A connection whose writes may not wait on the client longer than `client_timeout`.
pub struct PacedStream {
    inner: TcpStream,
    stall: Stall,
}

impl PacedStream {
    pub fn new(inner: TcpStream, client_timeout: Duration) -> Self {
        PacedStream {
            inner,
            stall: Stall::new(client_timeout),
        }
    }
}

fn stopped_reading() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        "the client stopped reading the response",
    )
}

impl AsyncRead for PacedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // Reads wait on the client for good reasons (a long poll, the next request):
        // hyper's head timeout and the body's guard bound them.
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for PacedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.stall.guard(cx, poll, || Err(stopped_reading()))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.stall.guard(cx, poll, || Err(stopped_reading()))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_flush(cx);
        this.stall.guard(cx, poll, || Err(stopped_reading()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
