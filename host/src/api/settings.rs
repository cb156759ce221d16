//! The settings an admin grants a batch when opening it (`settings` in `POST /v1/batches`):
//! named values its tasks read through `wasi:config/store`. A secret one is sealed here,
//! before it reaches the store, and no answer of the API ever carries a setting's value.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::error::{ApiError, ApiResult};
use crate::store::Setting;

/// Most settings one batch may be granted.
const MAX_SETTINGS: usize = 100;
/// The longest value of a setting, in bytes.
const MAX_VALUE_BYTES: usize = 64 * 1024;

/// A setting's value: text, or `{"value": ..., "secret": true}` for a secret.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum SettingValue {
    Text(String),
    Marked(MarkedValue),
}

/// A value with its secret marking.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MarkedValue {
    pub value: String,
    /// Secret: sealed at rest, and scrubbed from the attempt's log, error, stdout and
    /// stderr if the task writes it there.
    #[serde(default)]
    pub secret: bool,
}

impl fmt::Debug for MarkedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value: &dyn fmt::Debug = if self.secret {
            &"[secret]"
        } else {
            &self.value
        };
        f.debug_struct("MarkedValue")
            .field("value", value)
            .field("secret", &self.secret)
            .finish()
    }
}

/// The settings of an opening, checked, their secrets sealed with the server's key.
pub(super) fn sealed(
    state: &AppState,
    settings: BTreeMap<String, SettingValue>,
) -> ApiResult<Vec<Setting>> {
    let bad = |detail: String| ApiError::bad_request(format!("field `settings`: {detail}"));
    if settings.len() > MAX_SETTINGS {
        return Err(bad(format!(
            "{} settings, more than the {MAX_SETTINGS} allowed",
            settings.len()
        )));
    }
    let mut out = Vec::with_capacity(settings.len());
    for (name, value) in settings {
        let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        if name.is_empty() || name.len() > 128 || !name.chars().all(plain) {
            return Err(bad(format!(
                "name `{name}` must be 1 to 128 letters, digits, `_`, `-` or `.`"
            )));
        }
        let (value, secret) = match value {
            SettingValue::Text(value) => (value, false),
            SettingValue::Marked(marked) => (marked.value, marked.secret),
        };
        if value.len() > MAX_VALUE_BYTES {
            return Err(bad(format!(
                "`{name}` is {} bytes, more than the {MAX_VALUE_BYTES} allowed",
                value.len()
            )));
        }
        let value = if secret {
            let key = state
                .scheduler
                .config()
                .secret_key
                .as_ref()
                .ok_or_else(|| {
                    bad("this server keeps no secrets: it was started without a secret key".into())
                })?;
            key.seal(&name, &value).map_err(|e| {
                ApiError::from(crate::scheduler::Error::Internal(
                    e.context("sealing a secret"),
                ))
            })?
        } else {
            value
        };
        out.push(Setting {
            name,
            value,
            secret,
        });
    }
    Ok(out)
}
