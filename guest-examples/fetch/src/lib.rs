//! `fetch`: outbound HTTP (the `task-http` world). Input: a URL, `http://` or `https://`.
//! Fetches it with GET and returns the sha256 of the response body, in hex.
//!
//! When its batch was granted a setting `AUTHORIZATION` (a secret, typically), it is sent
//! as the `Authorization` header of every request.
//!
//! A redirect is followed by a new request (wasi:http never follows one itself), so qhost
//! checks its `Location` against the batch's grant like any other request: one outside
//! it fails with `HTTP-request-denied`.
//!
//! An origin that pushes back (`429 Too Many Requests` or `503 Service Unavailable` with
//! `Retry-After: SECONDS`) is left alone for that long: the task asks qhost to run it
//! again then (`retry-after`), without using an attempt, and its group waits too.

use sha2::{Digest, Sha256};

// `generate_all`: the WASI interfaces wasi:http uses get bindings here too.
wit_bindgen::generate!({ path: "../../wit", world: "qhost:task/task-http", generate_all });

use qhost::task::host::{log, retry_after};
use qhost::task::types::Level;
use wasi::config::store as config;
use wasi::http::outgoing_handler;
use wasi::http::types::{Fields, IncomingBody, IncomingResponse, Method, OutgoingRequest, Scheme};
use wasi::io::streams::StreamError;

/// Redirects followed before giving up.
const MAX_REDIRECTS: usize = 5;

struct Fetch;

impl Guest for Fetch {
    fn run(input: Vec<u8>, _info: TaskInfo) -> Result<Vec<u8>, String> {
        let url = String::from_utf8(input).map_err(|_| "the input must be a URL, in UTF-8")?;
        let mut url = url.trim().to_owned();
        for _ in 0..=MAX_REDIRECTS {
            let response = get(&url)?;
            let status = response.status();
            if (300..400).contains(&status)
                && let Some(location) = header(&response, "location")
            {
                log(Level::Info, &format!("{url}: {status}, redirected to {location}"));
                url = follow(&url, &location);
                continue;
            }
            if (status == 429 || status == 503)
                && let Some(wait) = header(&response, "retry-after")
                    .and_then(|value| value.trim().parse::<u32>().ok())
            {
                log(Level::Warn, &format!("{url}: {status}, retry after {wait}s"));
                retry_after(wait);
                return Err(format!("{url}: HTTP status {status}, retry after {wait}s"));
            }
            let body = read_body(&response)?;
            if !(200..300).contains(&status) {
                return Err(format!("{url}: HTTP status {status}"));
            }
            log(Level::Info, &format!("{url}: {status}, {} bytes", body.len()));
            return Ok(to_hex(&Sha256::digest(&body)).into_bytes());
        }
        Err(format!("more than {MAX_REDIRECTS} redirects"))
    }
}

/// Sends a GET to `url` and waits for the response's head.
fn get(url: &str) -> Result<IncomingResponse, String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("`{url}` is not an absolute http or https URL"))?;
    let scheme = match scheme {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => return Err(format!("`{url}`: scheme `{other}` is not http or https")),
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, "/"),
    };
    let headers = Fields::new();
    if let Ok(Some(authorization)) = config::get("AUTHORIZATION") {
        headers
            .append("authorization", authorization.as_bytes())
            .map_err(|e| format!("the AUTHORIZATION setting: {e:?}"))?;
    }
    let request = OutgoingRequest::new(headers);
    let invalid = |part: &str| format!("`{url}`: invalid {part}");
    request.set_method(&Method::Get).map_err(|()| invalid("method"))?;
    request.set_scheme(Some(&scheme)).map_err(|()| invalid("scheme"))?;
    request.set_authority(Some(authority)).map_err(|()| invalid("host"))?;
    request.set_path_with_query(Some(path)).map_err(|()| invalid("path"))?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| format!("{url}: {e:?}"))?;
    pending.subscribe().block();
    pending
        .get()
        .ok_or_else(|| format!("{url}: no response"))?
        .map_err(|()| format!("{url}: response taken twice"))?
        .map_err(|e| format!("{url}: {e:?}"))
}

fn header(response: &IncomingResponse, name: &str) -> Option<String> {
    let values = response.headers().get(name);
    values
        .first()
        .map(|value| String::from_utf8_lossy(value).into_owned())
}

/// Where a `Location` leads from `url`: itself when absolute, else on `url`'s origin.
fn follow(url: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_owned();
    }
    let origin_end = url
        .find("://")
        .and_then(|at| url[at + 3..].find('/').map(|slash| at + 3 + slash))
        .unwrap_or(url.len());
    let origin = &url[..origin_end];
    if location.starts_with('/') {
        format!("{origin}{location}")
    } else {
        format!("{origin}/{location}")
    }
}

fn read_body(response: &IncomingResponse) -> Result<Vec<u8>, String> {
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
    Ok(bytes)
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

export!(Fetch);
