//! A task's limits as both drivers keep them: only the fields that differ from a fixed
//! base, so that a task with the usual limits stores `{}` instead of some 180 bytes of
//! JSON in its row, and a claim reads it back without parsing.

use std::sync::LazyLock;
use std::time::Duration;

use serde_json::Value;

use crate::runtime::TaskLimits;
use crate::runtime::limits::{KIB, MIB};

/// What stored limits are relative to. Never change it: queued tasks' limits are read
/// back against it (a change of the defaults goes to `TaskLimits::default` instead).
const BASE: TaskLimits = TaskLimits {
    memory: 64 * MIB,
    timeout: Duration::from_secs(30),
    output: MIB,
    stdout: 64 * KIB,
    stderr: 64 * KIB,
    log: 64 * KIB,
    http_requests: 100,
    http_sent: MIB,
    http_received: 16 * MIB,
    http_timeout: Duration::from_secs(30),
};

/// The base's fields, serialized once: every task with other limits is compared with them.
static BASE_FIELDS: LazyLock<serde_json::Map<String, Value>> = LazyLock::new(|| fields(&BASE));

fn fields(limits: &TaskLimits) -> serde_json::Map<String, Value> {
    match serde_json::to_value(limits).expect("limits serialize") {
        Value::Object(fields) => fields,
        _ => unreachable!("limits serialize to an object"),
    }
}

/// The stored form of `limits`: a JSON object of the fields that differ from the base.
pub fn to_stored(limits: &TaskLimits) -> String {
    if *limits == BASE {
        return "{}".to_owned();
    }
    let differ: serde_json::Map<String, Value> = fields(limits)
        .into_iter()
        .filter(|(name, value)| BASE_FIELDS.get(name) != Some(value))
        .collect();
    Value::Object(differ).to_string()
}

/// Limits read back from their stored form (or from a whole object, as stores kept them
/// before); what cannot be read is the defaults.
pub fn from_stored(text: &str) -> TaskLimits {
    if text == "{}" {
        return BASE;
    }
    let Ok(Value::Object(stored)) = serde_json::from_str::<Value>(text) else {
        return TaskLimits::default();
    };
    let mut all = BASE_FIELDS.clone();
    all.extend(stored);
    serde_json::from_value(Value::Object(all)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_usual_limits_store_as_an_empty_object() {
        assert_eq!(to_stored(&TaskLimits::default()), "{}");
    }

    #[test]
    fn stored_limits_read_back_as_they_were() {
        let limits = TaskLimits {
            memory: 8 * MIB,
            timeout: Duration::from_millis(1500),
            ..TaskLimits::default()
        };
        let stored = to_stored(&limits);
        let keys: Vec<String> = match serde_json::from_str(&stored).unwrap() {
            Value::Object(fields) => fields.keys().cloned().collect(),
            other => panic!("stored limits are an object: {other}"),
        };
        assert_eq!(keys, ["memory", "timeout"]);
        assert_eq!(from_stored(&stored), limits);
        assert_eq!(
            from_stored(&to_stored(&TaskLimits::default())),
            TaskLimits::default()
        );
        // Rows written whole, before this form, read the same.
        assert_eq!(
            from_stored(&serde_json::to_string(&limits).unwrap()),
            limits
        );
    }
}
