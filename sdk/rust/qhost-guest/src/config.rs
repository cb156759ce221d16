//! The settings a task's batch was granted (`settings` when it was opened), secret ones
//! included, read through `wasi:config/store`.

use crate::bindings::wasi::config::store;

/// The setting `name`; none when the batch was not granted it.
pub fn setting(name: &str) -> Result<Option<String>, String> {
    store::get(name).map_err(|e| format!("reading the setting {name}: {e:?}"))
}
