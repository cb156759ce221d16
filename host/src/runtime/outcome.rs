//! How one run of a task ended: the closed set of outcomes and the report a run produces.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// How an attempt ended. The runtime produces every variant but `Cancelled` and `Lost`
/// on its own; the scheduler records `Cancelled` when a caller cancels a running task
/// and `Lost` when the node that ran it died.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// `run` returned `ok` within every limit.
    Succeeded,
    /// `run` returned `err(message)`: the task itself reported a failure.
    GuestError,
    /// The component trapped: `unreachable`, stack overflow, a Rust panic, ...
    Trap,
    /// The run exceeded its wall-clock limit and was stopped by the host.
    Timeout,
    /// The component tried to grow its linear memory past its limit and then trapped.
    MemoryLimit,
    /// `run` returned more output bytes than the output limit.
    OutputTooLarge,
    /// The run went past one of its outbound HTTP limits (requests, bytes sent or
    /// received, time per request) and was stopped by the host.
    HttpLimit,
    /// The run used the CPU time its tenant's budget had left and was stopped by the
    /// host; the tenant's tasks wait for the budget's next window.
    Budget,
    /// The run was stopped because its task was cancelled.
    Cancelled,
    /// The node running the attempt died; the attempt's end is unknown.
    Lost,
    /// The host could not start the attempt (it could not load the module or read the
    /// batch's grant): no fault of the task's, so the attempt is given back and the task
    /// runs again after a backoff (see `crate::store::fate`).
    HostError,
    /// The task never ran: a task it runs after did not succeed, and its `on_failure` is
    /// `skip`. A task's outcome only, never an attempt's.
    Skipped,
    /// `run` returned `ok` after `qhost:task/spawn.suspend`: the task gave its slot back
    /// to wait for its children, and runs again with its saved state once they end. An
    /// attempt's outcome, and a waiting task's, never an ended task's.
    Suspended,
    /// The task asked to run again later (`retry-after`), as its upstream pushed back: it
    /// runs again then without using one of its attempts, and its group starts no task
    /// meanwhile.
    Deferred,
}

impl Outcome {
    pub const ALL: [Outcome; 14] = [
        Outcome::Succeeded,
        Outcome::GuestError,
        Outcome::Trap,
        Outcome::Timeout,
        Outcome::MemoryLimit,
        Outcome::OutputTooLarge,
        Outcome::HttpLimit,
        Outcome::Budget,
        Outcome::Cancelled,
        Outcome::Lost,
        Outcome::HostError,
        Outcome::Skipped,
        Outcome::Suspended,
        Outcome::Deferred,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::GuestError => "guest-error",
            Outcome::Trap => "trap",
            Outcome::Timeout => "timeout",
            Outcome::MemoryLimit => "memory-limit",
            Outcome::OutputTooLarge => "output-too-large",
            Outcome::HttpLimit => "http-limit",
            Outcome::Budget => "budget",
            Outcome::Cancelled => "cancelled",
            Outcome::Lost => "lost",
            Outcome::HostError => "host-error",
            Outcome::Skipped => "skipped",
            Outcome::Suspended => "suspended",
            Outcome::Deferred => "deferred",
        }
    }

    pub fn is_success(self) -> bool {
        self == Outcome::Succeeded
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Outcome {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Outcome::ALL
            .into_iter()
            .find(|o| o.as_str() == s)
            .ok_or_else(|| {
                let allowed: Vec<_> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
                format!(
                    "unknown outcome `{s}`; expected one of {}",
                    allowed.join(", ")
                )
            })
    }
}

impl RunReport {
    /// Takes the log lines, as the execution log keeps them: the task's own, a line for
    /// each outbound HTTP request in time order among them, and, when lines were dropped at
    /// the log limit, a last line that says how many.
    pub fn take_logs(&mut self) -> Vec<LogLine> {
        let mut lines = std::mem::take(&mut self.logs);
        if !self.http.is_empty() {
            lines.extend(self.http.iter().map(HttpCall::log_line));
            // Stable: lines logged at the same microsecond keep their order.
            lines.sort_by_key(|line| line.at_micros);
        }
        if self.logs_dropped > 0 {
            lines.push(LogLine {
                at_micros: self.duration.as_micros().try_into().unwrap_or(u64::MAX),
                level: LogLevel::Warn,
                message: format!(
                    "[qhost] {} more log line(s) dropped: the attempt's log limit was reached",
                    self.logs_dropped
                ),
            });
        }
        lines
    }
}

/// Cuts `text` to at most `max` bytes, at a character boundary, ending it with a mark
/// that says how many bytes were cut: `… [cut: N bytes more]`. Text within `max` is
/// returned as it is.
pub fn cut_text(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    // The mark is longest when everything is cut: room for that one always suffices.
    let room = max.saturating_sub(cut_mark(text.len()).len());
    let keep = (0..=room)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let mark = cut_mark(text.len() - keep);
    text.truncate(keep);
    text.push_str(&mark);
    text
}

fn cut_mark(bytes: usize) -> String {
    format!("… [cut: {bytes} bytes more]")
}

/// Severity of a task's log line, as the `qhost:task/host` interface defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl LogLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Trace => "trace",
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        }
    }
}

/// One line a task logged through `qhost:task/host.log`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LogLine {
    /// Time since the attempt started.
    pub at_micros: u64,
    pub level: LogLevel,
    pub message: String,
}

/// Bytes a task wrote to stdout or stderr, kept up to a limit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Captured {
    pub bytes: Vec<u8>,
    /// How many bytes were written past the limit and dropped.
    pub dropped: u64,
}

/// One outbound HTTP request of an attempt, as its log records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCall {
    /// When it started, since the attempt started.
    pub at_micros: u64,
    pub method: String,
    /// `SCHEME://HOST[:PORT]`; the path and query are the task's business and not kept.
    pub origin: String,
    /// The response's status, once its headers came.
    pub status: Option<u16>,
    /// Request body bytes sent.
    pub sent: u64,
    /// Response body bytes received.
    pub received: u64,
    /// From its start to the end of its response body, or to the end of the attempt.
    pub duration: Duration,
    /// Why it was refused or failed, if it was.
    pub error: Option<String>,
    /// It never went out: the allow-lists or the address checks refused it.
    pub refused: bool,
}

impl HttpCall {
    fn log_line(&self) -> LogLine {
        let mut message = format!("[qhost] http {} {}", self.method, self.origin);
        if let Some(status) = self.status {
            message.push_str(&format!(" -> {status}"));
        }
        message.push_str(&format!(
            ", sent {}, received {}, {}",
            bytesize::ByteSize(self.sent),
            bytesize::ByteSize(self.received),
            humantime::format_duration(Duration::from_millis(self.duration.as_millis() as u64))
        ));
        if let Some(error) = &self.error {
            message.push_str(&format!(": {error}"));
        }
        let level = if self.error.is_some() {
            LogLevel::Warn
        } else {
            LogLevel::Info
        };
        LogLine {
            at_micros: self.at_micros,
            level,
            message,
        }
    }
}

/// What one run of a task produced.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub outcome: Outcome,
    /// The output of a `succeeded` run.
    pub output: Option<Vec<u8>>,
    /// Why the run did not succeed: the guest's own message, the trap, or the limit hit.
    pub error: Option<String>,
    pub logs: Vec<LogLine>,
    /// Log lines dropped because the attempt's log limit was reached.
    pub logs_dropped: u64,
    pub stdout: Captured,
    pub stderr: Captured,
    /// Its outbound HTTP requests, in the order they were made.
    pub http: Vec<HttpCall>,
    /// How long after its end a `deferred` run asked to run again.
    pub retry_after: Option<Duration>,
    /// The instance slot that ran the task.
    pub slot: usize,
    pub started_at: SystemTime,
    pub duration: Duration,
    /// The CPU time it used: its instantiation, its wasm and the host calls it made,
    /// without the time it waited.
    pub cpu: Duration,
    /// The memory it held over its run, in MiB-seconds: its size over time.
    pub memory_mib_seconds: f64,
    /// The HTTP body bytes it sent and received, over all its requests.
    pub http_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_text_keeps_what_fits_and_counts_the_rest() {
        assert_eq!(cut_text("short".into(), 100), "short");
        let cut = cut_text("x".repeat(1000), 100);
        assert!(cut.len() <= 100, "{}", cut.len());
        let kept = cut.bytes().take_while(|&b| b == b'x').count();
        assert!(
            cut.ends_with(&format!("… [cut: {} bytes more]", 1000 - kept)),
            "{cut}"
        );
        // Never inside a character.
        let cut = cut_text("é".repeat(100), 51);
        assert!(cut.len() <= 51 && cut.starts_with('é'), "{cut}");
        assert!(cut.ends_with("bytes more]"), "{cut}");
    }
}
