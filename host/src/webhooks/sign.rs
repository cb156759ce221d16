//! The signature of a webhook's request, in its `Qhost-Signature` header:
//!
//! ```text
//! Qhost-Signature: t=1764106200,v1=5f8c...e1
//! ```
//!
//! `t` is when the try was sent (Unix seconds) and `v1` the lowercase hex of
//! HMAC-SHA256, keyed with the webhook's secret, of `t`, a `.`, and the body's bytes as
//! received. A receiver computes the same over what it received, compares in constant
//! time, and refuses a `t` too far from its clock (five minutes, say): a request replayed
//! later fails the check. Each try is signed anew; the event's `id` (in the body and the
//! `Qhost-Event-Id` header) tells repeats apart.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The header's name.
pub const HEADER: &str = "Qhost-Signature";

fn mac(secret: &[u8], timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The header's value for `body` sent at `timestamp` (Unix seconds).
pub fn signature(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    let tag = mac(secret, timestamp, body).finalize().into_bytes();
    format!("t={timestamp},v1={}", hex::encode(tag))
}

/// Checks a header's value against `body`, at `now` (Unix seconds), allowing `tolerance`
/// seconds between its `t` and `now`: what a receiver does.
pub fn verify(
    secret: &[u8],
    header: &str,
    body: &[u8],
    now: i64,
    tolerance: i64,
) -> Result<(), &'static str> {
    let mut timestamp = None;
    let mut tags = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", tag)) => tags.extend(hex::decode(tag).ok()),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or("no timestamp `t`")?;
    if (now - timestamp).abs() > tolerance {
        return Err("the timestamp is too far from now: a replay, or a clock off");
    }
    let expected = mac(secret, timestamp, body);
    if tags
        .iter()
        .any(|tag| expected.clone().verify_slice(tag).is_ok())
    {
        Ok(())
    } else {
        Err("no signature `v1` matches")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_for_its_body_and_time_only() {
        let secret = b"0123456789abcdef";
        let header = signature(secret, 1_700_000_000, b"{\"a\":1}");
        assert!(header.starts_with("t=1700000000,v1="), "{header}");
        assert_eq!(
            verify(secret, &header, b"{\"a\":1}", 1_700_000_010, 300),
            Ok(())
        );
        assert!(verify(secret, &header, b"{\"a\":2}", 1_700_000_010, 300).is_err());
        assert!(
            verify(
                b"another secret!!",
                &header,
                b"{\"a\":1}",
                1_700_000_010,
                300
            )
            .is_err()
        );
        assert!(verify(secret, &header, b"{\"a\":1}", 1_700_001_000, 300).is_err());
    }
}
