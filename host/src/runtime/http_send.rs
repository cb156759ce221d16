//! Sending one admitted request: resolve its host, check every address, connect to a
//! checked address (so a second, different DNS answer cannot slip through), speak TLS for
//! `https`, and meter both bodies against the attempt's limits.

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use wasmtime_wasi_http::{Error, WasiBody};

use super::TaskLimits;
use super::address::{is_own, is_public};
use super::http_gate::{Direction, HttpLedger};
use super::origin::RequestOrigin;

/// What drives a response's connection once its head is in.
type IoFuture = Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>;

/// What a sent request answers: its response, or why there is none.
pub(crate) type Answer = wasmtime_wasi_http::Result<(http::Response<WasiBody>, IoFuture)>;

pub(crate) trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// The answer to a request refused before it went out.
pub(crate) async fn refused(error: Error) -> Answer {
    Err(error)
}

/// Sends `request` to `origin`, under the attempt's limits, and records how it went in
/// `ledger` as call `call`.
pub(crate) async fn send(
    request: http::Request<WasiBody>,
    origin: RequestOrigin,
    forbidden: Arc<[SocketAddr]>,
    limits: TaskLimits,
    ledger: Arc<HttpLedger>,
    call: usize,
) -> Answer {
    let deadline = Instant::now() + limits.http_timeout;
    let meter = Meter {
        ledger: ledger.clone(),
        call,
        limits,
    };
    match tokio::time::timeout_at(
        deadline,
        exchange(request, &origin, &forbidden, meter, deadline),
    )
    .await
    {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err((error, reason))) => {
            if matches!(error, Error::DestinationIpProhibited) {
                ledger.refuse(call, reason);
            } else {
                ledger.close(call, Some(reason));
            }
            Err(error)
        }
        Err(_) => {
            let reason = over_time(&limits);
            ledger.close(call, Some(reason.clone()));
            ledger.trip(reason);
            Err(Error::ConnectionTimeout)
        }
    }
}

fn over_time(limits: &TaskLimits) -> String {
    format!(
        "an HTTP request took longer than {}, its limit `http_timeout`",
        humantime::format_duration(limits.http_timeout)
    )
}

/// Connects, sends the request and reads the response's head.
async fn exchange(
    mut request: http::Request<WasiBody>,
    origin: &RequestOrigin,
    forbidden: &[SocketAddr],
    meter: Meter,
    deadline: Instant,
) -> Result<(http::Response<WasiBody>, IoFuture), (Error, String)> {
    let stream = open(origin, forbidden).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| (Error::HttpProtocolError, format!("HTTP handshake: {e}")))?;

    // The request line carries the path only: the origin is the connection's.
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    if !request.headers().contains_key(http::header::HOST) {
        let host = request.uri().authority().map(|a| a.as_str().to_owned());
        if let Some(value) = host.and_then(|h| http::HeaderValue::from_str(&h).ok()) {
            request.headers_mut().insert(http::header::HOST, value);
        }
    }
    *request.uri_mut() = path.parse().map_err(|_| {
        (
            Error::HttpRequestUriInvalid,
            "the request's path is invalid".into(),
        )
    })?;
    let request = request.map(|body| Metered::new(body, meter.clone(), Direction::Sent, None));

    // Drive the connection while waiting for the response's head.
    let mut conn = Some(conn);
    let send = sender.send_request(request);
    tokio::pin!(send);
    let response = std::future::poll_fn(|cx| {
        if let Poll::Ready(answer) = send.as_mut().poll(cx) {
            return Poll::Ready(answer);
        }
        if let Some(running) = conn.as_mut()
            && let Poll::Ready(ended) = Pin::new(running).poll(cx)
        {
            conn = None;
            if let Err(err) = ended {
                return Poll::Ready(Err(err));
            }
            return send.as_mut().poll(cx);
        }
        Poll::Pending
    })
    .await
    .map_err(|e| {
        let reason = meter
            .ledger
            .trip_reason()
            .map_or_else(|| format!("HTTP exchange: {e}"), |(_, reason)| reason);
        (Error::from(e), reason)
    })?;
    meter
        .ledger
        .set_status(meter.call, response.status().as_u16());
    let response = response.map(|body| {
        http_body_util::BodyExt::boxed_unsync(Metered::new(
            body,
            meter,
            Direction::Received,
            Some(Box::pin(tokio::time::sleep_until(deadline))),
        ))
    });
    let io: IoFuture = Box::new(async move {
        match conn {
            Some(conn) => conn.await.map_err(Error::from),
            None => Ok(()),
        }
    });
    Ok((response, io))
}

/// Opens a connection to `origin` that the address checks allow: resolves its host,
/// refuses an address that is not public (unless the allow-list named it) or is one of
/// the server's `forbidden` own addresses, connects to a checked address (so a second DNS
/// answer cannot lead elsewhere), and speaks TLS for `https`. Guests' requests and
/// webhooks ([`crate::webhooks`]) connect through here alike.
pub(crate) async fn open(
    origin: &RequestOrigin,
    forbidden: &[SocketAddr],
) -> Result<Box<dyn Stream>, (Error, String)> {
    let addresses = resolve(origin).await?;
    if let Some(ip) = addresses
        .iter()
        .find(|ip| is_own(**ip, origin.port, forbidden))
    {
        return Err((
            Error::DestinationIpProhibited,
            format!(
                "refused: {} is this qhost server's own address; an allow-list entry must \
                 name its port ({}) to reach it",
                SocketAddr::new(*ip, origin.port),
                origin.port
            ),
        ));
    }
    let stream = connect(&addresses, origin.port).await?;
    Ok(match origin.scheme {
        super::origin::Scheme::Http => Box::new(stream),
        super::origin::Scheme::Https => Box::new(tls(stream, &origin.host).await?),
    })
}

/// The addresses to try: the host itself when it is an IP address, else what it resolves
/// to, every one of them public unless the host is `localhost` and they are loopback.
async fn resolve(origin: &RequestOrigin) -> Result<Vec<IpAddr>, (Error, String)> {
    if let Ok(ip) = origin.host.parse::<IpAddr>() {
        // Matched an allow-list entry naming this very address.
        return Ok(vec![ip]);
    }
    let found: Vec<IpAddr> = tokio::net::lookup_host((origin.host.as_str(), origin.port))
        .await
        .map_err(|e| {
            (
                Error::DnsError {
                    rcode: Some(e.to_string()),
                    info_code: None,
                },
                format!("resolving {}: {e}", origin.host),
            )
        })?
        .map(|addr| addr.ip())
        .collect();
    if found.is_empty() {
        return Err((
            Error::DestinationNotFound,
            format!("{} resolves to no address", origin.host),
        ));
    }
    let local = origin.host == "localhost";
    if let Some(ip) = found
        .iter()
        .find(|ip| !(is_public(**ip) || (local && ip.is_loopback())))
    {
        return Err((
            Error::DestinationIpProhibited,
            format!(
                "refused: {} resolves to {ip}, which is not a public address (the allow-list \
                 must name an address to reach it)",
                origin.host
            ),
        ));
    }
    Ok(found)
}

/// Connects to the first of `addresses` that answers.
async fn connect(addresses: &[IpAddr], port: u16) -> Result<TcpStream, (Error, String)> {
    let mut last = None;
    for ip in addresses {
        match TcpStream::connect(SocketAddr::new(*ip, port)).await {
            Ok(stream) => return Ok(stream),
            Err(err) => last = Some(err),
        }
    }
    let err = last.expect("at least one address");
    let reason = format!("connecting: {err}");
    Err((Error::Connect(err), reason))
}

async fn tls(
    stream: TcpStream,
    host: &str,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, (Error, String)> {
    use rustls::pki_types::ServerName;
    let name = match host.parse::<IpAddr>() {
        Ok(ip) => ServerName::from(ip),
        Err(_) => ServerName::try_from(host.to_owned()).map_err(|e| {
            (
                Error::HttpRequestUriInvalid,
                format!("`{host}` is not a TLS server name: {e}"),
            )
        })?,
    };
    tokio_rustls::TlsConnector::from(tls_config())
        .connect(name, stream)
        .await
        .map_err(|e| {
            let reason = format!("TLS: {e}");
            (Error::Tls(e), reason)
        })
}

/// The TLS client settings: the web's public roots (webpki-roots), with ring.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.into(),
            };
            let config = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
            Arc::new(config)
        })
        .clone()
}

/// Where a body's bytes are counted.
#[derive(Clone)]
struct Meter {
    ledger: Arc<HttpLedger>,
    call: usize,
    limits: TaskLimits,
}

/// A body whose bytes count against the attempt's limit for their direction; a response
/// body also against its request's deadline.
struct Metered<B> {
    inner: B,
    meter: Meter,
    direction: Direction,
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<B> Metered<B> {
    fn new(
        inner: B,
        meter: Meter,
        direction: Direction,
        deadline: Option<Pin<Box<Sleep>>>,
    ) -> Self {
        Metered {
            inner,
            meter,
            direction,
            deadline,
        }
    }

    fn limit(&self) -> u64 {
        match self.direction {
            Direction::Sent => self.meter.limits.http_sent,
            Direction::Received => self.meter.limits.http_received,
        }
    }

    fn ended(&self, error: Option<String>) {
        if self.direction == Direction::Received {
            self.meter.ledger.close(self.meter.call, error);
        }
    }
}

impl<B> Body for Metered<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Error> + std::fmt::Display,
{
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let late = self
            .deadline
            .as_mut()
            .is_some_and(|deadline| deadline.as_mut().poll(cx).is_ready());
        if late {
            let reason = over_time(&self.meter.limits);
            self.ended(Some(reason.clone()));
            self.meter.ledger.trip(reason);
            return Poll::Ready(Some(Err(Error::ConnectionReadTimeout)));
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let limit = self.limit();
                    let counted = self.meter.ledger.add(
                        self.meter.call,
                        self.direction,
                        data.len() as u64,
                        limit,
                    );
                    if let Err(reason) = counted {
                        self.ended(Some(reason));
                        return Poll::Ready(Some(Err(match self.direction {
                            Direction::Sent => Error::HttpRequestBodySize(Some(limit)),
                            Direction::Received => Error::HttpResponseBodySize(Some(limit)),
                        })));
                    }
                }
                if self.inner.is_end_stream() {
                    self.ended(None);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(err))) => {
                self.ended(Some(format!("reading the body: {err}")));
                Poll::Ready(Some(Err(err.into())))
            }
            Poll::Ready(None) => {
                self.ended(None);
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
