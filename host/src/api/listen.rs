//! Accepting connections, and the bounds no client can push the server past:
//!
//! - at most [`Limits::max_connections`] connections at once; past it, new ones wait in the
//!   kernel's accept queue until one closes;
//! - a request's head must arrive within [`Limits::client_timeout`] of the connection
//!   opening or of the previous response, so a client that sends nothing, sends its head a
//!   byte at a time, or keeps an idle connection open is disconnected;
//! - a request body may pause for at most that long, and so may a response the client
//!   does not read.

use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tower::ServiceExt as _;

/// How much of the server clients may hold, and for how long.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// The longest a client may take to send a request's head (counted from the
    /// connection's opening or its previous response), or pause in sending a body or in
    /// reading a response.
    pub client_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 1024,
            client_timeout: Duration::from_secs(30),
        }
    }
}

/// Serves `app` on `listener` within `limits` until `shutdown` resolves, then lets the
/// requests in flight finish and closes idle connections.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let connections = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.client_timeout);
    let mut shutdown = pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = connections.clone().acquire_owned() => permit.expect("never closed"),
            () = &mut shutdown => break,
        };
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(err) => {
                    accept_failed(err).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Small responses go out at once, not held back waiting for the client's ACK.
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!("setting TCP_NODELAY failed: {err}");
        }
        let app = app.clone();
        let timeout = limits.client_timeout;
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let request = request.map(|body| Body::new(StallGuard::new(body, timeout)));
            app.clone().oneshot(request)
        });
        let io = TokioIo::new(StallGuard::new(tcp, timeout));
        let connection = graceful.watch(http.serve_connection(io, service));
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!("connection ended: {err}");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Waits a little after a failed accept: out of file descriptors or memory, trying again at
/// once would spin.
async fn accept_failed(err: io::Error) {
    if matches!(
        err.kind(),
        io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!("accepting a connection failed: {err}");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// A request body or a connection that may not stall for longer than `timeout`: the
/// clock runs while the request body is awaited and has no data, or while a write waits
/// for the client to read, and starts again at every step forward.
struct StallGuard<T> {
    inner: T,
    timeout: Duration,
    stalled: Pin<Box<Sleep>>,
    /// Whether `stalled` is running: it is armed when a wait begins.
    armed: bool,
}

impl<T> StallGuard<T> {
    fn new(inner: T, timeout: Duration) -> Self {
        StallGuard {
            inner,
            timeout,
            stalled: Box::pin(tokio::time::sleep(timeout)),
            armed: false,
        }
    }

    /// Maps a poll of the inner value: progress disarms the clock, a wait arms it, and a
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
            self.stalled.as_mut().reset(deadline);
        }
        ready!(self.stalled.as_mut().poll(cx));
        Poll::Ready(timed_out())
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl http_body::Body for StallGuard<Incoming> {
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
        this.guard(cx, poll, || {
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

fn stopped_reading() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        "the client stopped reading the response",
    )
}

impl AsyncRead for StallGuard<TcpStream> {
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

impl AsyncWrite for StallGuard<TcpStream> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.guard(cx, poll, || Err(stopped_reading()))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.guard(cx, poll, || Err(stopped_reading()))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_flush(cx);
        this.guard(cx, poll, || Err(stopped_reading()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
