//! One try of one event: a `POST` of its JSON body, signed, through the same checks as a
//! task's outbound HTTP: its origin must be in the operator's `--allow-http` (checked
//! again at every try, as the list may have changed since the URL was given), its host's
//! addresses public unless the list names them, and qhost's own listen addresses reached
//! only through an entry naming their very port.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::TokioIo;

use super::TRY_TIMEOUT;
use crate::runtime::origin::{AllowedOrigin, Port, RequestOrigin};
use crate::runtime::{RuntimeConfig, http_gate, http_send};

/// Posts `body` to `url` with `headers`; `Ok` on a 2xx answer, else why not.
pub(crate) async fn deliver(
    config: &RuntimeConfig,
    url: &http::Uri,
    origin: &RequestOrigin,
    headers: Vec<(&'static str, String)>,
    body: Bytes,
) -> Result<u16, String> {
    // The webhook's own origin is its grant: the operator's list is what decides.
    let grant = [AllowedOrigin {
        scheme: origin.scheme,
        host: origin.host.clone(),
        port: Port::Is(origin.port),
    }];
    let own: Arc<[std::net::SocketAddr]> = config.own_addresses.clone().into();
    let forbidden = http_gate::check_lists(&config.allow_http, &grant, &own, origin)?;
    match tokio::time::timeout(
        TRY_TIMEOUT,
        exchange(url, origin, &forbidden, headers, body),
    )
    .await
    {
        Ok(answer) => answer,
        Err(_) => Err(format!(
            "no answer within {}",
            humantime::format_duration(TRY_TIMEOUT)
        )),
    }
}

async fn exchange(
    url: &http::Uri,
    origin: &RequestOrigin,
    forbidden: &[std::net::SocketAddr],
    headers: Vec<(&'static str, String)>,
    body: Bytes,
) -> Result<u16, String> {
    let stream = http_send::open(origin, forbidden)
        .await
        .map_err(|(_, reason)| reason)?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP handshake: {e}"))?;
    let conn = tokio::spawn(conn);
    let path = url.path_and_query().map_or("/", |p| p.as_str());
    let host = url.authority().map_or(origin.host.as_str(), |a| a.as_str());
    let mut request = http::Request::post(path)
        .header(http::header::HOST, host)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(
            http::header::USER_AGENT,
            concat!("qhost/", env!("CARGO_PKG_VERSION")),
        );
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let request = request
        .body(Full::new(body))
        .map_err(|e| format!("building the request: {e}"))?;
    let answer = sender.send_request(request).await;
    conn.abort();
    let status = answer.map_err(|e| format!("HTTP exchange: {e}"))?.status();
    if status.is_success() {
        Ok(status.as_u16())
    } else {
        Err(format!("answered {status}"))
    }
}
