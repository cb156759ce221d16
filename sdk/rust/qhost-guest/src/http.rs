//! Outbound HTTP through `wasi:http`: a request is sent only when the task's batch was
//! granted its origin (`allow_http`) within the operator's list; any other is refused
//! (wasi:http's `HTTP-request-denied`: the error reads `HttpRequestDenied`), and the
//! attempt's log says why. Redirects are not followed: a `3xx` is a response like any
//! other.
//!
//! ```ignore
//! let page = qhost_guest::http::get("https://example.com/data.json")
//!     .header("accept", "application/json")
//!     .send()?;
//! if page.status != 200 {
//!     return Err(format!("HTTP status {}", page.status));
//! }
//! ```

use crate::bindings::wasi::http::outgoing_handler;
use crate::bindings::wasi::http::types::{
    ErrorCode, Fields, IncomingBody, IncomingResponse, Method, OutgoingBody, OutgoingRequest,
    Scheme,
};
use crate::bindings::wasi::io::streams::StreamError;

/// Bytes written to a request's body at a time, as `wasi:io` allows.
const CHUNK: usize = 4096;

/// A request to send: its method, URL, headers and body.
#[derive(Debug, Clone)]
pub struct Request {
    method: Method,
    url: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

/// A response: its status, headers and whole body.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

/// A `GET` of `url` (`http://` or `https://`).
pub fn get(url: impl Into<String>) -> Request {
    Request::new(Method::Get, url)
}

/// A `POST` of `body` to `url`.
pub fn post(url: impl Into<String>, body: impl Into<Vec<u8>>) -> Request {
    Request::new(Method::Post, url).body(body)
}

impl Request {
    /// A request with any method: `Method::Put`, `Method::Other("PURGE".into())`.
    pub fn new(method: Method, url: impl Into<String>) -> Request {
        Request {
            method,
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Adds the header `name: value`.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<Vec<u8>>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sends `body`.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// Sends the request and reads the whole response. The error names the URL and what
    /// failed: `http://example.com/: HttpRequestDenied` for an origin not granted.
    pub fn send(self) -> Result<Response, String> {
        let url = &self.url;
        let fail = |what: &str| format!("{url}: {what}");
        let (scheme, authority, path) = split(url)?;
        let headers = Fields::new();
        for (name, value) in &self.headers {
            headers
                .append(name, value)
                .map_err(|e| fail(&format!("the header {name}: {e:?}")))?;
        }
        let request = OutgoingRequest::new(headers);
        request
            .set_method(&self.method)
            .map_err(|()| fail("invalid method"))?;
        request
            .set_scheme(Some(&scheme))
            .map_err(|()| fail("invalid scheme"))?;
        request
            .set_authority(Some(authority))
            .map_err(|()| fail("invalid host"))?;
        request
            .set_path_with_query(Some(&path))
            .map_err(|()| fail("invalid path"))?;
        let body = request.body().map_err(|()| fail("the body was taken"))?;
        let pending = outgoing_handler::handle(request, None).map_err(|e| fail(&code(&e)))?;
        {
            let stream = body.write().map_err(|()| fail("the body was taken"))?;
            for chunk in self.body.chunks(CHUNK) {
                stream
                    .blocking_write_and_flush(chunk)
                    .map_err(|e| fail(&format!("writing the body: {e:?}")))?;
            }
        }
        OutgoingBody::finish(body, None).map_err(|e| fail(&format!("{e:?}")))?;
        pending.subscribe().block();
        let response = pending
            .get()
            .ok_or_else(|| fail("no response"))?
            .map_err(|()| fail("the response was taken"))?
            .map_err(|e| fail(&code(&e)))?;
        read(&response).map_err(|e| fail(&e))
    }
}

impl Response {
    /// The first value of the header `name` (any case), as text.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, value)| String::from_utf8_lossy(value).into_owned())
    }

    /// The body as text; an error when it is not UTF-8.
    pub fn text(&self) -> Result<&str, String> {
        std::str::from_utf8(&self.body).map_err(|_| "the response body is not UTF-8".into())
    }

    /// The body read as JSON of type `T`.
    #[cfg(feature = "json")]
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
        serde_json::from_slice(&self.body)
            .map_err(|e| format!("the response body is not the JSON expected: {e}"))
    }
}

/// A wasi:http error as its case's name (`HttpRequestDenied`), with its details if any.
fn code(error: &ErrorCode) -> String {
    let shown = format!("{error:?}");
    shown.trim_start_matches("ErrorCode::").to_owned()
}

/// A URL's scheme, authority and path with its query.
fn split(url: &str) -> Result<(Scheme, &str, String), String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("`{url}` is not an absolute http or https URL"))?;
    let scheme = match scheme {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => {
            return Err(format!(
                "`{url}`: the scheme `{other}` is not http or https"
            ));
        }
    };
    let at = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(at);
    if authority.is_empty() {
        return Err(format!("`{url}` names no host"));
    }
    let path = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    Ok((scheme, authority, path))
}

fn read(response: &IncomingResponse) -> Result<Response, String> {
    let headers = response.headers().entries();
    let body = response.consume().map_err(|()| "the body was taken")?;
    let mut bytes = Vec::new();
    {
        let stream = body.stream().map_err(|()| "the body's stream was taken")?;
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(chunk) => bytes.extend_from_slice(&chunk),
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(e)) => {
                    return Err(format!("reading the body: {}", e.to_debug_string()));
                }
            }
        }
    }
    let _trailers = IncomingBody::finish(body);
    Ok(Response {
        status: response.status(),
        headers,
        body: bytes,
    })
}
