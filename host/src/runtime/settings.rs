//! The settings a task's batch was granted, which the task reads through
//! `wasi:config/store`, and the scrubbing that keeps secret ones out of what an attempt
//! leaves behind (its log, error, stdout and stderr).

use std::fmt;

use wasmtime_wasi_config::WasiConfigVariables;

use super::outcome::RunReport;

/// One granted setting, in clear.
#[derive(Clone, PartialEq, Eq)]
pub struct GrantedSetting {
    pub name: String,
    pub value: String,
    pub secret: bool,
}

impl fmt::Debug for GrantedSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value: &dyn fmt::Debug = if self.secret {
            &"[secret]"
        } else {
            &self.value
        };
        f.debug_struct("GrantedSetting")
            .field("name", &self.name)
            .field("value", value)
            .finish()
    }
}

/// What `wasi:config/store` answers in one attempt.
pub(crate) fn variables(settings: &[GrantedSetting]) -> WasiConfigVariables {
    settings
        .iter()
        .map(|s| (s.name.as_str(), s.value.as_str()))
        .collect()
}

/// Secrets shorter than this are not scrubbed: they would blank ordinary text.
const MIN_SCRUBBED: usize = 4;

/// What stands for a secret's value where a task wrote it.
const MARK: &str = "[secret]";

/// Replaces every secret value the task wrote to its log, error, stdout or stderr.
pub(crate) fn scrub(report: &mut RunReport, settings: &[GrantedSetting]) {
    for secret in settings
        .iter()
        .filter(|s| s.secret && s.value.len() >= MIN_SCRUBBED)
    {
        let value = secret.value.as_str();
        for line in &mut report.logs {
            if line.message.contains(value) {
                line.message = line.message.replace(value, MARK);
            }
        }
        if let Some(error) = &mut report.error
            && error.contains(value)
        {
            *error = error.replace(value, MARK);
        }
        for captured in [&mut report.stdout.bytes, &mut report.stderr.bytes] {
            replace_bytes(captured, value.as_bytes());
        }
    }
}

fn replace_bytes(bytes: &mut Vec<u8>, value: &[u8]) {
    if !bytes.windows(value.len()).any(|w| w == value) {
        return;
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = &bytes[..];
    while let Some(at) = rest.windows(value.len()).position(|w| w == value) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(MARK.as_bytes());
        rest = &rest[at + value.len()..];
    }
    out.extend_from_slice(rest);
    *bytes = out;
}

#[cfg(test)]
mod tests {
    use super::replace_bytes;

    #[test]
    fn every_occurrence_is_replaced() {
        let mut bytes = b"key=hunter2; again hunter2.".to_vec();
        replace_bytes(&mut bytes, b"hunter2");
        assert_eq!(bytes, b"key=[secret]; again [secret].");
    }
}
