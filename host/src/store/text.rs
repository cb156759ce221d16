//! How an attempt's captured stdout and stderr (and a task's output, in the command
//! line's JSON) travel in JSON: as text a person can read,
//! with the exact bytes in base64 beside them (`stdout_base64`) when they are not UTF-8.
//!
//! Used on flattened byte fields: `#[serde(flatten, with = "text::stdout")]`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Decodes a `_base64` twin, when there is one; otherwise the text is the bytes.
fn bytes_of<E: serde::de::Error>(
    text: String,
    twin: Option<String>,
    name: &str,
) -> Result<Vec<u8>, E> {
    match twin {
        None => Ok(text.into_bytes()),
        Some(b64) => BASE64
            .decode(b64)
            .map_err(|e| E::custom(format!("`{name}_base64` is not base64: {e}"))),
    }
}

/// The text of `bytes`, and their base64 when the text is not them exactly.
fn text_of(bytes: &[u8]) -> (String, Option<String>) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_owned(), None),
        Err(_) => (
            String::from_utf8_lossy(bytes).into_owned(),
            Some(BASE64.encode(bytes)),
        ),
    }
}

/// `stdout` as it travels.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct StdoutText {
    /// What the attempt wrote to stdout, kept up to its limit, as text (bytes that are not
    /// UTF-8 replaced by U+FFFD).
    #[serde(rename = "stdout", default)]
    #[schema(required = true)]
    text: String,
    /// The exact bytes in base64, only when `stdout` is not UTF-8.
    #[serde(
        rename = "stdout_base64",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    base64: Option<String>,
}

/// `stderr` as it travels.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct StderrText {
    /// What the attempt wrote to stderr, as `stdout` is.
    #[serde(rename = "stderr", default)]
    #[schema(required = true)]
    text: String,
    /// The exact bytes in base64, only when `stderr` is not UTF-8.
    #[serde(
        rename = "stderr_base64",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    base64: Option<String>,
}

/// A task's output as `qhost task output --json` prints it.
#[derive(Serialize, Deserialize)]
pub struct OutputText {
    /// The output as text (bytes that are not UTF-8 replaced by U+FFFD).
    #[serde(rename = "output", default)]
    text: String,
    /// The exact bytes in base64, only when `output` is not UTF-8.
    #[serde(
        rename = "output_base64",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    base64: Option<String>,
}

macro_rules! text_field {
    ($module:ident, $wire:ident, $name:literal) => {
        #[doc = concat!("`", $name, "` as text, with its `_base64` twin when not UTF-8.")]
        pub mod $module {
            use serde::{Deserialize, Deserializer, Serialize, Serializer};

            pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
                let (text, base64) = super::text_of(bytes);
                super::$wire { text, base64 }.serialize(s)
            }

            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
                let wire = super::$wire::deserialize(d)?;
                super::bytes_of(wire.text, wire.base64, $name)
            }
        }
    };
}

text_field!(stdout, StdoutText, "stdout");
text_field!(stderr, StderrText, "stderr");
text_field!(output, OutputText, "output");

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Record {
        #[serde(flatten, with = "super::stdout")]
        stdout: Vec<u8>,
        #[serde(flatten, with = "super::stderr")]
        stderr: Vec<u8>,
    }

    #[test]
    fn utf8_travels_as_text_alone() {
        let record = Record {
            stdout: "hé\n".into(),
            stderr: Vec::new(),
        };
        let wire = serde_json::to_value(&record).unwrap();
        assert_eq!(wire, json!({"stdout": "hé\n", "stderr": ""}));
        assert_eq!(serde_json::from_value::<Record>(wire).unwrap(), record);
    }

    #[test]
    fn other_bytes_travel_as_readable_text_with_their_exact_base64() {
        let record = Record {
            stdout: b"ok".to_vec(),
            stderr: vec![b'a', 0xff, b'b'],
        };
        let wire = serde_json::to_value(&record).unwrap();
        assert_eq!(
            wire,
            json!({"stdout": "ok", "stderr": "a\u{fffd}b", "stderr_base64": "Yf9i"})
        );
        assert_eq!(serde_json::from_value::<Record>(wire).unwrap(), record);
    }
}
