//! Webhooks: a batch's end and a task's final failure, posted to a URL as they happen, so
//! that nobody needs to poll. The server may have one for every batch (`qhost serve
//! --webhook URL --webhook-secret-file F`), and a batch its own (`webhook` when it is
//! opened).
//!
//! - this file: what a webhook is, the checks on its URL and secret, and the bounds on
//!   delivery;
//! - [`sign`]: the signature each request carries, and how a receiver checks it;
//! - `deliver`: one try, through the same allow-list and address checks as a task's
//!   outbound HTTP ([`crate::runtime`]'s `http_gate` and `http_send`).
//!
//! Events wait in the store's outbox (written with the end they tell of, see
//! [`crate::store::webhook`]), and a node's sender (`scheduler/node/webhooks.rs`) claims
//! and posts them.

mod deliver;
pub mod sign;

use std::time::Duration;

pub(crate) use deliver::deliver;

use crate::runtime::AllowedOrigin;
use crate::runtime::origin::{RequestOrigin, check_grant};

/// Most tries of one event; then it is given up, and the log says so.
pub const MAX_TRIES: u32 = 8;
/// Longest one try may take, connecting and reading the answer's head included.
pub const TRY_TIMEOUT: Duration = Duration::from_secs(10);
/// Most time between an event and its last try: past it, an event is given up.
pub const MAX_AGE: Duration = Duration::from_secs(6 * 3600);
/// Largest body posted, in bytes; a view that would pass it is left out of the event.
pub const MAX_BODY: usize = 64 * 1024;
/// Most events a node posts at once: an unreachable hook holds no more than these.
pub const MAX_IN_FLIGHT: usize = 8;
/// A webhook's URL, at most this long.
pub const MAX_URL: usize = 2048;
/// A webhook's secret: at least and at most this many bytes.
pub const MIN_SECRET: usize = 16;
pub const MAX_SECRET: usize = 1024;

/// How long to wait after the `tries`-th try failed: 1 s, then four times longer each
/// time, at most an hour (1 s, 4 s, 16 s, 64 s, 4 m, 17 m, 1 h: eight tries span about
/// 1.5 h, within [`MAX_AGE`]).
pub fn backoff(tries: u32) -> Duration {
    let exponent = tries.saturating_sub(1).min(10);
    Duration::from_secs(4u64.saturating_pow(exponent)).min(Duration::from_secs(3600))
}

/// A webhook's URL, checked: `http` or `https`, with a host and no user, and an origin
/// within the operator's allow-list (`--allow-http`). The error names `field`.
pub fn check_url(
    operator: &[AllowedOrigin],
    url: &str,
    field: &str,
) -> Result<(http::Uri, RequestOrigin), String> {
    let bad = |why: String| format!("{field}: {why}");
    if url.len() > MAX_URL {
        return Err(bad(format!("longer than {MAX_URL} bytes")));
    }
    let uri: http::Uri = url
        .parse()
        .map_err(|e| bad(format!("`{url}` is not a URL: {e}")))?;
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        return Err(bad(format!("`{url}` names a user: give the secret apart")));
    }
    let origin = RequestOrigin::of(&uri).ok_or_else(|| {
        bad(format!(
            "`{url}` is not an http:// or https:// URL with a host"
        ))
    })?;
    check_grant(operator, &[origin.to_string()]).map_err(bad)?;
    Ok((uri, origin))
}

/// A webhook's secret, checked; the error names `field`.
pub fn check_secret(secret: &str, field: &str) -> Result<(), String> {
    if !(MIN_SECRET..=MAX_SECRET).contains(&secret.len()) {
        return Err(format!(
            "{field}: {} bytes; a webhook's secret is {MIN_SECRET} to {MAX_SECRET} bytes",
            secret.len()
        ));
    }
    Ok(())
}

/// The server's own webhook.
#[derive(Clone)]
pub struct ServerWebhook {
    pub url: String,
    pub secret: String,
}

impl std::fmt::Debug for ServerWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerWebhook")
            .field("url", &self.url)
            .field("secret", &"[secret]")
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_must_lie_within_the_allow_list() {
        let operator = vec!["http://127.0.0.1:*".parse().unwrap()];
        let (uri, origin) = check_url(&operator, "http://127.0.0.1:9000/hook?x=1", "f").unwrap();
        assert_eq!(uri.path(), "/hook");
        assert_eq!(origin.port, 9000);
        let err = check_url(
            &operator,
            "https://hooks.example.com/x",
            "field `webhook.url`",
        )
        .unwrap_err();
        assert!(err.starts_with("field `webhook.url`: "), "{err}");
        assert!(err.contains("hooks.example.com"), "{err}");
        let none = check_url(&[], "http://127.0.0.1:9000/", "f").unwrap_err();
        assert!(none.contains("allows no outbound HTTP"), "{none}");
        for bad in ["ftp://127.0.0.1/", "/relative", "http://u:p@127.0.0.1:1/"] {
            assert!(check_url(&operator, bad, "f").is_err(), "{bad}");
        }
    }

    #[test]
    fn backoff_grows_fourfold_up_to_an_hour_and_tries_fit_the_age() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(4));
        assert_eq!(backoff(9), Duration::from_secs(3600));
        let total: Duration = (1..MAX_TRIES).map(backoff).sum();
        assert!(total + TRY_TIMEOUT * MAX_TRIES < MAX_AGE, "{total:?}");
    }
}
