//! Sizes, durations and times as people write them (`64MiB`, `500ms`, `2m`, RFC 3339): parsing, and the
//! text form durations take in JSON and TOML. Every setting, field and flag that takes one
//! goes through here, so each is written and refused alike.

use std::time::Duration;

/// Parses a byte size such as `64MiB`, `512 KiB` or `1048576`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<bytesize::ByteSize>()
        .map(|size| size.as_u64())
        .map_err(|e| format!("`{text}` is not a byte size like 64MiB or 512KiB: {e}"))
}

/// Parses a duration such as `500ms`, `30s` or `2m`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim())
        .map_err(|e| format!("`{text}` is not a duration like 500ms, 30s or 2m: {e}"))
}

/// Parses an RFC 3339 time such as `2026-11-24T09:00:00Z` or `2026-11-24T10:00:00+01:00`
/// into microseconds since the Unix epoch.
pub fn parse_time(text: &str) -> Result<i64, String> {
    let at: jiff::Timestamp = text.trim().parse().map_err(|e| {
        format!("`{text}` is not an RFC 3339 time like 2026-11-24T09:00:00Z (an offset or Z is required): {e}")
    })?;
    Ok(at.as_microsecond())
}

/// Parses a moment given as an RFC 3339 time or as a span before `now` (`2h`), in
/// microseconds since the Unix epoch.
pub fn parse_time_or_ago(text: &str, now: i64) -> Result<i64, String> {
    match parse_duration(text) {
        Ok(ago) => Ok(now - ago.as_micros() as i64),
        Err(_) => parse_time(text).map_err(|e| format!("{e}; or a span ago like 2h")),
    }
}

/// Serde adapter: a duration travels as humantime text (`"30s"`).
pub mod duration_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_duration(&text).map_err(serde::de::Error::custom)
    }

    /// The same for an optional duration.
    pub mod option {
        use serde::{Deserialize, Deserializer, Serializer};
        use std::time::Duration;

        pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => super::serialize(d, s),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
            Option::<String>::deserialize(d)?
                .map(|text| crate::units::parse_duration(&text).map_err(serde::de::Error::custom))
                .transpose()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes_and_durations_and_names_what_was_wrong() {
        assert_eq!(parse_bytes("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_bytes("512 KiB").unwrap(), 512 << 10);
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_bytes("lots").unwrap_err().contains("`lots`"));
        assert!(parse_duration("soon").unwrap_err().contains("`soon`"));
        assert_eq!(parse_time("1970-01-01T00:00:01Z").unwrap(), 1_000_000);
        assert_eq!(parse_time("1970-01-01T01:00:01+01:00").unwrap(), 1_000_000);
        assert!(parse_time("tomorrow").unwrap_err().contains("`tomorrow`"));
        assert!(
            parse_time("2026-11-24T09:00:00")
                .unwrap_err()
                .contains("offset")
        );
    }

    #[test]
    fn a_moment_is_a_time_or_a_span_before_now() {
        let now = 10_000_000;
        assert_eq!(parse_time_or_ago("2s", now).unwrap(), 8_000_000);
        assert_eq!(
            parse_time_or_ago("1970-01-01T00:00:01Z", now).unwrap(),
            1_000_000
        );
        let refused = parse_time_or_ago("yesterday", now).unwrap_err();
        assert!(
            refused.contains("`yesterday`") && refused.contains("span ago"),
            "{refused}"
        );
    }
}
