//! What an admin grants a batch when opening it: the origins its tasks may reach over HTTP,
//! and named settings they read through `wasi:config/store`, some of them secret.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A named value granted to a batch's tasks.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    pub name: String,
    /// The value; a secret's is sealed under the server's secret key
    /// ([`crate::secrets::SecretKey::seal`]), so the store never holds it in clear.
    pub value: String,
    #[serde(default)]
    pub secret: bool,
}

/// A secret's value is never printed, sealed or not.
impl fmt::Debug for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value: &dyn fmt::Debug = if self.secret {
            &"[secret]"
        } else {
            &self.value
        };
        f.debug_struct("Setting")
            .field("name", &self.name)
            .field("value", value)
            .field("secret", &self.secret)
            .finish()
    }
}

/// What a batch was granted when opened; fixed from then on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// Origins, `SCHEME://HOST[:PORT|:*]`, within the operator's `--allow-http`.
    #[serde(default)]
    pub allow_http: Vec<String>,
    #[serde(default)]
    pub settings: Vec<Setting>,
}

impl Grant {
    pub fn is_empty(&self) -> bool {
        self.allow_http.is_empty() && self.settings.is_empty()
    }

    pub fn has_secret(&self) -> bool {
        self.settings.iter().any(|s| s.secret)
    }

    /// The grant as both stores keep it (see [`Stored`]); none for an empty one, which is
    /// not kept.
    pub(crate) fn stored(allow_http: &[String], settings: &[Setting]) -> Option<Stored> {
        if allow_http.is_empty() && settings.is_empty() {
            return None;
        }
        Some(Stored {
            allow_http: serde_json::to_string(allow_http).expect("origins serialize"),
            settings: serde_json::to_string(settings).expect("settings serialize"),
            has_secret: settings.iter().any(|s| s.secret),
        })
    }

    /// A kept grant read back; what does not read as one grants nothing.
    pub(crate) fn from_stored(allow_http: &str, settings: &str) -> Grant {
        Grant {
            allow_http: serde_json::from_str(allow_http).unwrap_or_default(),
            settings: serde_json::from_str(settings).unwrap_or_default(),
        }
    }
}

/// A grant's columns: its origins and its settings as JSON, and whether a setting is
/// secret (so that a store finds a sealed value without reading every grant).
pub(crate) struct Stored {
    pub allow_http: String,
    pub settings: String,
    pub has_secret: bool,
}

/// The first secret among kept settings (JSON), sealed as stored.
pub(crate) fn first_secret(settings: &str) -> Option<Setting> {
    serde_json::from_str::<Vec<Setting>>(settings)
        .unwrap_or_default()
        .into_iter()
        .find(|s| s.secret)
}
