//! `qhost serve`'s batch quotas: the defaults a batch opens with, from flags, variables or
//! the config file.

use clap::Args;
use serde::Deserialize;

use crate::runtime::limits::GIB;
use crate::store::Quotas;
use crate::store::quota::MAX_QUOTA;
use crate::store::spawn::{DEFAULT_CHILDREN, DEFAULT_DEPTH};
use crate::units::parse_bytes;

/// The quotas a batch opens with unless its opening sets its own; an admin changes one
/// batch's later (`qhost batch quota`). Each takes `off` for none.
#[derive(Debug, Default, Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaArgs {
    /// Tasks one batch may store, ended ones included until they are pruned (default
    /// 10000000).
    #[arg(long, env = "QHOST_QUOTA_TASKS")]
    pub quota_tasks: Option<String>,
    /// Bytes of input one batch's tasks may store (default 8GiB).
    #[arg(long, env = "QHOST_QUOTA_INPUT")]
    pub quota_input: Option<String>,
    /// Bytes of output one batch's tasks may store (default 8GiB).
    #[arg(long, env = "QHOST_QUOTA_OUTPUT")]
    pub quota_output: Option<String>,
    /// Bytes of text one batch's attempts may store: errors, log lines, stdout and stderr
    /// (default 2GiB).
    #[arg(long, env = "QHOST_QUOTA_TEXT")]
    pub quota_text: Option<String>,
    /// Children one task may submit over all its attempts (default 1000).
    #[arg(long, env = "QHOST_QUOTA_CHILDREN")]
    pub quota_children: Option<String>,
    /// How deep children may go: a task a client submits is at depth 0 (default 8).
    #[arg(long, env = "QHOST_QUOTA_DEPTH")]
    pub quota_depth: Option<String>,
}

/// The settings whose quotas are sizes, such as `512MiB`.
const SIZES: [&str; 3] = ["quota_input", "quota_output", "quota_text"];

impl QuotaArgs {
    /// The defaults these settings give, each flag over the file's.
    pub fn quotas(self, file: QuotaArgs) -> anyhow::Result<Quotas> {
        // Sizes are bytes; the others count.
        let pick = |flag: Option<String>, file: Option<String>, name: &str, default: u64| match flag
            .or(file)
        {
            None => Ok(Some(default)),
            Some(text) => parse(&text, !SIZES.contains(&name))
                .map_err(|e| anyhow::anyhow!("setting `{name}`: {e}")),
        };
        Ok(Quotas {
            tasks: pick(
                self.quota_tasks,
                file.quota_tasks,
                "quota_tasks",
                10_000_000,
            )?,
            input_bytes: pick(self.quota_input, file.quota_input, "quota_input", 8 * GIB)?,
            output_bytes: pick(
                self.quota_output,
                file.quota_output,
                "quota_output",
                8 * GIB,
            )?,
            text_bytes: pick(self.quota_text, file.quota_text, "quota_text", 2 * GIB)?,
            children: pick(
                self.quota_children,
                file.quota_children,
                "quota_children",
                DEFAULT_CHILDREN,
            )?,
            depth: pick(
                self.quota_depth,
                file.quota_depth,
                "quota_depth",
                DEFAULT_DEPTH,
            )?,
        })
    }
}

/// A quota as written: `off`, a count, or (for bytes) a size such as `512MiB`.
pub fn parse(text: &str, count: bool) -> Result<Option<u64>, String> {
    let quota = match text.trim() {
        "off" | "none" => return Ok(None),
        text if count => text
            .replace('_', "")
            .parse()
            .map_err(|_| format!("`{text}` is not a count, nor `off`"))?,
        text => parse_bytes(text)?,
    };
    if quota > MAX_QUOTA {
        return Err(format!(
            "`{text}` is more than the largest quota, {MAX_QUOTA}"
        ));
    }
    Ok(Some(quota))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotas_read_counts_sizes_and_off() {
        assert_eq!(parse("1_000", true), Ok(Some(1000)));
        assert_eq!(parse("512KiB", false), Ok(Some(512 * 1024)));
        assert_eq!(parse("off", false), Ok(None));
        assert!(parse("lots", true).unwrap_err().contains("`lots`"));
    }
}
