//! Per-task resource limits, their defaults, and the memory limiter that enforces them.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::budget::{Held, MemoryClock};

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1024 * KIB;
pub const GIB: u64 = 1024 * MIB;

/// The longest error message an attempt keeps, in bytes: a guest's own, a trap's, or a
/// limit's. Past it the message is cut, and says so ([`super::outcome::cut_text`]). Each
/// attempt keeps its own, so this bounds a task's view by its attempts.
pub const MAX_ERROR_BYTES: usize = 64 * 1024;

/// What a log line costs against its attempt's log limit besides its message: its time,
/// its level and its room in the execution log. An empty line is not free.
pub const LOG_LINE_COST: u64 = 64;

/// Log lines an attempt keeps at most, whatever its log limit.
pub const MAX_LOG_LINES: usize = 65_536;

/// The limits one task attempt runs under. A breach ends only that attempt, with its own
/// outcome (`timeout`, `memory-limit`, `output-too-large`); captured stdout, stderr and
/// logs are cut at their limit instead.
///
/// Limits kept before a field was added read it as its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskLimits {
    /// Linear memory of all of the component's memories together, in bytes.
    pub memory: u64,
    /// Wall-clock time for one attempt.
    #[serde(with = "crate::units::duration_text")]
    pub timeout: Duration,
    /// Output bytes `run` may return.
    pub output: u64,
    /// Bytes of stdout kept; the rest is dropped and counted.
    pub stdout: u64,
    /// Bytes of stderr kept; the rest is dropped and counted.
    pub stderr: u64,
    /// Bytes of log kept, each line costing its message and [`LOG_LINE_COST`]; further
    /// lines are dropped and counted.
    pub log: u64,
    /// Outbound HTTP requests one attempt may make, refused ones included.
    pub http_requests: u32,
    /// Request body bytes one attempt may send, over all its requests.
    pub http_sent: u64,
    /// Response body bytes one attempt may receive, over all its requests.
    pub http_received: u64,
    /// Wall-clock time for one request, from its start to the end of its response body.
    #[serde(with = "crate::units::duration_text")]
    pub http_timeout: Duration,
}

impl Default for TaskLimits {
    fn default() -> Self {
        TaskLimits {
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
        }
    }
}

impl TaskLimits {
    /// The largest limits a server accepts unless its operator sets others.
    pub fn default_maxima() -> Self {
        TaskLimits {
            memory: 4 * GIB,
            timeout: Duration::from_secs(24 * 3600),
            output: 64 * MIB,
            stdout: 16 * MIB,
            stderr: 16 * MIB,
            log: 16 * MIB,
            http_requests: 10_000,
            http_sent: GIB,
            http_received: GIB,
            http_timeout: Duration::from_secs(3600),
        }
    }

    /// Each limit at most the one of `maxima`.
    pub fn at_most(&self, maxima: &TaskLimits) -> TaskLimits {
        TaskLimits {
            memory: self.memory.min(maxima.memory),
            timeout: self.timeout.min(maxima.timeout),
            output: self.output.min(maxima.output),
            stdout: self.stdout.min(maxima.stdout),
            stderr: self.stderr.min(maxima.stderr),
            log: self.log.min(maxima.log),
            http_requests: self.http_requests.min(maxima.http_requests),
            http_sent: self.http_sent.min(maxima.http_sent),
            http_received: self.http_received.min(maxima.http_received),
            http_timeout: self.http_timeout.min(maxima.http_timeout),
        }
    }

    /// Checks every limit against `maxima`, naming the first one out of range.
    pub fn check_within(&self, maxima: &TaskLimits) -> Result<(), LimitError> {
        let checks = [
            ("memory", self.memory, maxima.memory),
            ("output", self.output, maxima.output),
            ("stdout", self.stdout, maxima.stdout),
            ("stderr", self.stderr, maxima.stderr),
            ("log", self.log, maxima.log),
            ("http_sent", self.http_sent, maxima.http_sent),
            ("http_received", self.http_received, maxima.http_received),
        ];
        for (name, value, max) in checks {
            if value > max {
                return Err(LimitError::AboveMaximum {
                    name,
                    value: bytesize::ByteSize(value).to_string(),
                    max: bytesize::ByteSize(max).to_string(),
                });
            }
        }
        if self.memory < 64 * KIB {
            return Err(LimitError::BelowMinimum {
                name: "memory",
                value: bytesize::ByteSize(self.memory).to_string(),
                min: "64 KiB (one wasm page)".into(),
            });
        }
        if self.http_requests > maxima.http_requests {
            return Err(LimitError::AboveMaximum {
                name: "http_requests",
                value: self.http_requests.to_string(),
                max: maxima.http_requests.to_string(),
            });
        }
        for (name, value, max) in [
            ("timeout", self.timeout, maxima.timeout),
            ("http_timeout", self.http_timeout, maxima.http_timeout),
        ] {
            check_duration(name, value, max)?;
        }
        Ok(())
    }
}

/// A time limit: at least 1ms, at most `max`.
fn check_duration(name: &'static str, value: Duration, max: Duration) -> Result<(), LimitError> {
    if value.is_zero() {
        return Err(LimitError::BelowMinimum {
            name,
            value: "0s".into(),
            min: "1ms".into(),
        });
    }
    if value > max {
        return Err(LimitError::AboveMaximum {
            name,
            value: humantime::format_duration(value).to_string(),
            max: humantime::format_duration(max).to_string(),
        });
    }
    Ok(())
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LimitError {
    #[error("limit `{name}` is {value}, above the maximum of {max}")]
    AboveMaximum {
        name: &'static str,
        value: String,
        max: String,
    },
    #[error("limit `{name}` is {value}, below the minimum of {min}")]
    BelowMinimum {
        name: &'static str,
        value: String,
        min: String,
    },
}

/// Enforces a task's memory limit over all of its linear memories, remembers that a
/// growth was refused so a later trap is reported as `memory-limit`, and keeps the memory
/// held over time, which it tells its [`MemoryClock`] at each growth.
pub(crate) struct MemoryLimiter {
    limit: usize,
    pub(crate) refused: bool,
    held: Held,
    clock: MemoryClock,
}

impl MemoryLimiter {
    #[cfg(test)]
    pub(crate) fn new(limit: u64) -> Self {
        Self::with_clock(limit, super::budget::memory_clock(Instant::now()))
    }

    /// A limiter that tells `clock` of each growth.
    pub(crate) fn with_clock(limit: u64, clock: MemoryClock) -> Self {
        let held = *clock.borrow();
        MemoryLimiter {
            limit: usize::try_from(limit).unwrap_or(usize::MAX),
            refused: false,
            held,
            clock,
        }
    }

    /// The memory the run has held until `end`, in MiB-seconds: its size over time, which
    /// changes only where it grows (wasm memory never shrinks).
    pub(crate) fn mib_seconds(&self, end: Instant) -> f64 {
        self.held.at(end) / MIB as f64
    }
}

/// Table elements one task may have: far more than real components use, and a bound on
/// the host memory a hostile one can take.
const MAX_TABLE_ELEMENTS: usize = 1_000_000;

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let in_use = self.held.bytes;
        let after = in_use - current.min(in_use) + desired;
        if after > self.limit {
            self.refused = true;
            return Ok(false);
        }
        let now = Instant::now();
        self.held = Held {
            byte_seconds: self.held.at(now),
            since: now,
            bytes: after,
        };
        self.clock.send_replace(self.held);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_above_the_maxima_are_named() {
        let maxima = TaskLimits::default_maxima();
        let too_big = TaskLimits {
            memory: 8 * GIB,
            ..TaskLimits::default()
        };
        let err = too_big.check_within(&maxima).unwrap_err();
        assert!(err.to_string().contains("`memory`"), "{err}");
        let zero = TaskLimits {
            timeout: Duration::ZERO,
            ..TaskLimits::default()
        };
        assert!(
            zero.check_within(&maxima)
                .unwrap_err()
                .to_string()
                .contains("`timeout`")
        );
        assert!(TaskLimits::default().check_within(&maxima).is_ok());
    }

    #[test]
    fn memory_limit_counts_all_memories() {
        use wasmtime::ResourceLimiter;
        let mut limiter = MemoryLimiter::new(MIB);
        assert!(limiter.memory_growing(0, 600 * 1024, None).unwrap());
        assert!(!limiter.memory_growing(0, 600 * 1024, None).unwrap());
        assert!(limiter.refused);
    }
}
