//! Accepting connections, and the bounds no client can push the server past:
//!
//! - at most [`Limits::max_connections`] connections at once, and at most
//!   [`Limits::max_per_peer`] from one address;
//! - past either cap, [`RESERVED`] connections more (a quarter of them per address) are
//!   let in for one request each, served only if it is the admin's, `/healthz` or
//!   `/readyz` (the [`Privileged`] test), so that the operator and health probes get through a full
//!   server; any other is answered `503 busy`;
//! - past those, a connection is answered `503 busy` at once and closed, rather than left
//!   in the kernel's accept queue;
//! - a request's head must arrive within [`Limits::header_timeout`] of the connection
//!   opening or of the previous response, so a client that sends nothing, sends its head a
//!   byte at a time, or keeps an idle connection open is disconnected;
//! - bodies and answers go at the client's pace only within [`super::slow::Pace`].

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tower::ServiceExt as _;

use super::error::ApiError;
use super::ready::App;
use super::slow::{Pace, PacedBody, PacedStream};

/// Connections let in past [`Limits::max_connections`], for the admin and health probes.
pub const RESERVED: usize = 64;
/// How long a connection let in past the cap has to send its request's head.
const RESERVED_HEAD_TIMEOUT: Duration = Duration::from_secs(2);
/// Connections being answered `503` and closed at once; more are closed unanswered.
const REFUSING: usize = 256;

/// How much of the server clients may hold, and for how long.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// Connections open at once from one address.
    pub max_per_peer: usize,
    /// The longest a client may take to send a request's head, counted from the
    /// connection's opening or its previous response.
    pub header_timeout: Duration,
    /// How slowly a client may send a body or read an answer.
    pub pace: Pace,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 1024,
            max_per_peer: 1024,
            header_timeout: Duration::from_secs(5),
            pace: Pace {
                client_timeout: Duration::from_secs(30),
                body_min_rate: 64 * 1024,
            },
        }
    }
}

/// Whether a request (by its path and headers) may use the room kept past the cap.
pub type Privileged = Arc<dyn Fn(&Uri, &HeaderMap) -> bool + Send + Sync>;

/// Connections open now, in all and per address: ordinary ones, and those let in past a
/// cap.
#[derive(Default)]
struct Open {
    ordinary: usize,
    reserved: usize,
    peers: HashMap<IpAddr, Counts>,
}

#[derive(Default, Clone, Copy)]
struct Counts {
    ordinary: usize,
    reserved: usize,
}

impl Open {
    fn count(&mut self, peer: IpAddr, reserved: bool, up: bool) {
        let counts = self.peers.entry(peer).or_default();
        let (total, mine) = if reserved {
            (&mut self.reserved, &mut counts.reserved)
        } else {
            (&mut self.ordinary, &mut counts.ordinary)
        };
        if up {
            *total += 1;
            *mine += 1;
        } else {
            *total -= 1;
            *mine -= 1;
        }
        if counts.ordinary == 0 && counts.reserved == 0 {
            self.peers.remove(&peer);
        }
    }
}

/// A connection counted in [`Open`], until it is dropped.
struct Admitted {
    open: Arc<Mutex<Open>>,
    peer: IpAddr,
    reserved: bool,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.open.lock().expect("open connections lock");
        open.count(self.peer, self.reserved, false);
    }
}

/// What becomes of a connection just accepted.
enum Admission {
    /// Served as any other.
    Served(Admitted),
    /// Past a cap: one request, served only if privileged.
    Reserved(Admitted),
    /// Answered `503` and closed.
    Refused,
}

/// Lets a connection from `peer` in as an ordinary one while there is room in all and for
/// its address; else into the room kept past the caps while there is some (a quarter of
/// it per address); else refuses it.
fn admit(open: &Arc<Mutex<Open>>, peer: IpAddr, limits: &Limits) -> Admission {
    let mut counts = open.lock().expect("open connections lock");
    let mine = counts.peers.get(&peer).copied().unwrap_or_default();
    let reserved =
        if counts.ordinary < limits.max_connections && mine.ordinary < limits.max_per_peer {
            false
        } else if counts.reserved < RESERVED && mine.reserved < RESERVED / 4 {
            true
        } else {
            return Admission::Refused;
        };
    counts.count(peer, reserved, true);
    let admitted = Admitted {
        open: open.clone(),
        peer,
        reserved,
    };
    if reserved {
        Admission::Reserved(admitted)
    } else {
        Admission::Served(admitted)
    }
}

/// Serves `app` on `listener` within `limits` until `shutdown` resolves, then lets the
/// requests in flight finish and closes idle connections.
pub async fn serve(
    listener: TcpListener,
    app: App,
    limits: Limits,
    privileged: Privileged,
    shutdown: impl Future<Output = ()>,
) {
    let open = Arc::new(Mutex::new(Open::default()));
    let refusing = Arc::new(Semaphore::new(REFUSING));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let mut reserved_http = hyper::server::conn::http1::Builder::new();
    reserved_http
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout.min(RESERVED_HEAD_TIMEOUT))
        .keep_alive(false);
    let mut shutdown = pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    accept_failed(err).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let (admitted, reserved) = match admit(&open, peer.ip(), &limits) {
            Admission::Served(admitted) => (admitted, false),
            Admission::Reserved(admitted) => (admitted, true),
            Admission::Refused => {
                // Past what may be answered, a connection is closed unanswered.
                if let Ok(permit) = refusing.clone().try_acquire_owned() {
                    tokio::spawn(async move {
                        refuse(tcp).await;
                        drop(permit);
                    });
                }
                continue;
            }
        };
        // Small responses go out at once, not held back waiting for the client's ACK.
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!("setting TCP_NODELAY failed: {err}");
        }
        let app = app.clone();
        let privileged = privileged.clone();
        let pace = limits.pace;
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            // The API once the server has started, even on a connection opened before.
            let app = app.router().clone();
            let let_in = !reserved || privileged(request.uri(), request.headers());
            async move {
                if !let_in {
                    return Ok::<_, Infallible>(busy());
                }
                let request = request.map(|body| Body::new(PacedBody::new(body, pace)));
                app.oneshot(request).await
            }
        });
        let io = TokioIo::new(PacedStream::new(tcp, pace.client_timeout));
        let builder = if reserved { &reserved_http } else { &http };
        let connection = graceful.watch(builder.serve_connection(io, service));
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!("connection ended: {err}");
            }
            drop(admitted);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Why a connection past the caps is not served.
const BUSY: &str = "the server has all the connections it takes, or all this address may \
                    hold; try again shortly";

fn busy() -> Response {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        super::error::ErrorCode::Busy,
        BUSY,
    )
    .into_response()
}

/// Answers `503 busy` on a connection the server does not take, and closes it; within a
/// second at most, whatever the client does.
async fn refuse(mut tcp: TcpStream) {
    let body = serde_json::json!({"error": "busy", "detail": BUSY}).to_string();
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        tcp.write_all(answer.as_bytes()).await?;
        tcp.shutdown().await?;
        // Read what the client sent until it closes: closing with its request unread
        // would reset the connection, and the client might lose the answer.
        let mut buf = [0u8; 4096];
        while tcp.read(&mut buf).await? > 0 {}
        io::Result::Ok(())
    })
    .await;
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
