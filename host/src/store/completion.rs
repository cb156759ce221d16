//! How one attempt ended, as a node reports it and as the execution log records it, and
//! the bounds on what a completion may write.

use super::{BatchId, Micros, TaskId};
use crate::runtime::{LogLine, Outcome};

/// How one attempt ended, reported by the node that ran it.
#[derive(Debug, Clone)]
pub struct Completion {
    pub task: TaskId,
    /// The task's batch, whose quotas its output and captured text count against.
    pub batch: BatchId,
    pub lease_token: i64,
    pub node: String,
    pub slot: Option<usize>,
    pub started_at: Micros,
    pub ended_at: Micros,
    /// The CPU time the run used, in microseconds; none where no run measured it (a task
    /// that could not start).
    pub cpu_micros: Option<Micros>,
    /// The memory the run held, in MiB-seconds; none where no run measured it.
    pub memory_mib_seconds: Option<f64>,
    /// The HTTP body bytes the run sent and received; none where no run measured it.
    pub http_bytes: Option<u64>,
    pub outcome: Outcome,
    pub error: Option<String>,
    pub output: Option<Vec<u8>>,
    pub logs: Vec<LogLine>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// What a `deferred` attempt asked: none for any other.
    pub defer: Option<Defer>,
}

/// A deferred attempt's ask: run the task again at `until` without using an attempt, and
/// hold its group until then, if the task was deferred fewer than `most` times before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Defer {
    pub until: Micros,
    pub most: u32,
}

/// The most a completion writes in each column, in bytes. Far below what either database
/// takes in one value (SQLite: 1e9 bytes by default; PostgreSQL: 1 GiB), and below that
/// all together, so one attempt's record can always be written. The runtime's own limits
/// keep runs well within these (at most 64 MiB of output, 16 MiB of each capture and of
/// log, 64 KiB of error): the drivers enforce them whatever a completion carries.
pub mod bounds {
    use crate::runtime::limits::MIB;

    /// An error message: cut, and marked, past it.
    pub const ERROR: usize = crate::runtime::limits::MAX_ERROR_BYTES;
    /// Output: a larger one ends the attempt `output-too-large`.
    pub const OUTPUT: usize = 128 * MIB as usize;
    /// Captured stdout, and stderr: cut past it.
    pub const CAPTURE: usize = 32 * MIB as usize;
    /// Log lines, as stored (JSON): later lines are dropped, and a last line says so.
    pub const LOG: usize = 64 * MIB as usize;
}

impl Completion {
    /// The completion with every column within [`bounds`], as the drivers write it.
    pub fn bounded(mut self) -> Completion {
        if let Some(error) = self.error.take() {
            self.error = Some(storable_text(error, bounds::ERROR));
        }
        if let Some(size) = self.output.as_ref().map(Vec::len)
            && size > bounds::OUTPUT
        {
            self.outcome = Outcome::OutputTooLarge;
            self.output = None;
            self.error = Some(format!(
                "returned {} of output, over the store's limit of {}",
                bytesize::ByteSize(size as u64),
                bytesize::ByteSize(bounds::OUTPUT as u64)
            ));
        }
        self.stdout.truncate(bounds::CAPTURE);
        self.stderr.truncate(bounds::CAPTURE);
        bound_logs(&mut self.logs, bounds::LOG);
        self
    }
}

/// Text a database's text column takes: within `max` bytes, and without NUL characters,
/// which PostgreSQL refuses in text (they become U+FFFD on every driver alike).
fn storable_text(text: String, max: usize) -> String {
    let text = if text.contains('\0') {
        text.replace('\0', "\u{FFFD}")
    } else {
        text
    };
    crate::runtime::outcome::cut_text(text, max)
}

/// Keeps the log lines whose JSON fits in `max` bytes; when some are dropped, a last line
/// says how many.
fn bound_logs(lines: &mut Vec<LogLine>, max: usize) {
    // JSON escapes a byte into at most 6; the rest of a line takes under 64.
    let most = lines
        .iter()
        .map(|l| 64 + 6 * l.message.len())
        .fold(0usize, usize::saturating_add);
    if most <= max {
        return;
    }
    // Room for the last line that says what was dropped.
    let mut room = max - 256;
    let mut keep = 0;
    for line in lines.iter() {
        let size = serde_json::to_string(line).map_or(usize::MAX, |json| json.len() + 1);
        if size > room {
            break;
        }
        room -= size;
        keep += 1;
    }
    let dropped = lines.len() - keep;
    let at_micros = lines.last().map_or(0, |l| l.at_micros);
    lines.truncate(keep);
    lines.push(LogLine {
        at_micros,
        level: crate::runtime::LogLevel::Warn,
        message: format!(
            "[qhost] {dropped} more log line(s) dropped: the log is over the store's limit of {}",
            bytesize::ByteSize(max as u64)
        ),
    });
}

/// How one attempt ended, as the execution log records it: from a node's completion, or
/// from a rescue (`lost`).
pub(crate) struct AttemptEnd<'a> {
    pub(crate) node: &'a str,
    pub(crate) slot: Option<usize>,
    pub(crate) started_at: Micros,
    pub(crate) ended_at: Micros,
    /// None: not measured (lost with its node, or never started).
    pub(crate) cpu_micros: Option<Micros>,
    pub(crate) memory_mib_seconds: Option<f64>,
    pub(crate) http_bytes: Option<u64>,
    pub(crate) outcome: Outcome,
    pub(crate) error: Option<&'a str>,
    pub(crate) logs: &'a [LogLine],
    pub(crate) stdout: &'a [u8],
    pub(crate) stderr: &'a [u8],
}

impl<'a> AttemptEnd<'a> {
    /// Whether its error may repeat its task's previous attempt's, so that the drivers
    /// keep the text once: a later attempt with an error.
    pub(crate) fn may_repeat_error(&self, attempt: i64) -> bool {
        attempt > 1 && self.error.is_some()
    }

    /// The bytes a batch's text quota gives back when its error repeats and is not kept
    /// again: what a completion charged for it (a lost attempt's error is the host's,
    /// never charged).
    pub(crate) fn repeated_error_refund(&self) -> i64 {
        match self.outcome {
            Outcome::Lost => 0,
            _ => self.error.map_or(0, str::len) as i64,
        }
    }

    pub(crate) fn of(c: &'a Completion) -> Self {
        AttemptEnd {
            node: &c.node,
            slot: c.slot,
            started_at: c.started_at,
            ended_at: c.ended_at,
            cpu_micros: c.cpu_micros,
            memory_mib_seconds: c.memory_mib_seconds,
            http_bytes: c.http_bytes,
            outcome: c.outcome,
            error: c.error.as_deref(),
            logs: &c.logs,
            stdout: &c.stdout,
            stderr: &c.stderr,
        }
    }
}

impl AttemptEnd<'_> {
    /// What the attempt used: the slot time it held, from its start to its end as the log
    /// records them, and the CPU time, memory and HTTP bytes its run measured. A tenant's
    /// usage is the sum over its attempts.
    pub(crate) fn used(&self) -> Used {
        let memory = self.memory_mib_seconds.unwrap_or(0.0).max(0.0);
        Used {
            attempts: 1,
            slot_micros: (self.ended_at - self.started_at).max(0),
            cpu_micros: self.cpu_micros.unwrap_or(0).max(0),
            memory_mib_seconds: memory,
            memory_mib_ms: super::budget::Spent::memory(memory),
            http_bytes: self
                .http_bytes
                .map_or(0, |b| i64::try_from(b).unwrap_or(i64::MAX)),
        }
    }
}

/// What attempts used: how many ran, the slot time they held and the CPU time they
/// burned, in microseconds, the memory they held, in MiB-seconds, and the HTTP body bytes
/// they sent and received. A hand-back (no run) uses none.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Used {
    pub(crate) attempts: i64,
    pub(crate) slot_micros: Micros,
    pub(crate) cpu_micros: Micros,
    pub(crate) memory_mib_seconds: f64,
    /// The memory again, in MiB-milliseconds rounded up per attempt, as a budget counts it.
    pub(crate) memory_mib_ms: i64,
    pub(crate) http_bytes: i64,
}

impl std::ops::AddAssign for Used {
    fn add_assign(&mut self, other: Used) {
        self.attempts += other.attempts;
        self.slot_micros += other.slot_micros;
        self.cpu_micros += other.cpu_micros;
        self.memory_mib_seconds += other.memory_mib_seconds;
        self.memory_mib_ms += other.memory_mib_ms;
        self.http_bytes += other.http_bytes;
    }
}

/// What a batch of completions did.
#[derive(Debug, Clone, Default)]
pub struct CompleteResult {
    /// Completions whose lease was no longer held (the attempt was rescued): ignored.
    pub stale: usize,
    /// Tasks that ended for good, with their batches.
    pub ended: Vec<(TaskId, BatchId)>,
    /// Tasks put back for another attempt.
    pub retried: usize,
    /// Whether events were written to the webhook outbox.
    pub hooked: bool,
    /// Whether a tenant these attempts belonged to is held for its spent CPU budget: the
    /// tasks nodes hold reserved go back, so that none of its starts (store/budget.rs).
    pub tenant_held: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::LogLevel;

    fn line(message: &str) -> LogLine {
        LogLine {
            at_micros: 7,
            level: LogLevel::Info,
            message: message.into(),
        }
    }

    #[test]
    fn a_log_over_the_bound_keeps_its_first_lines_and_says_how_many_were_dropped() {
        let mut lines: Vec<LogLine> = (0..1000).map(|_| line(&"x".repeat(100))).collect();
        bound_logs(&mut lines, 10 * 1024);
        let json = serde_json::to_string(&lines).unwrap();
        assert!(json.len() <= 10 * 1024, "{} bytes", json.len());
        let (mark, kept) = lines.split_last().unwrap();
        assert!(kept.iter().all(|l| l.message.len() == 100));
        assert_eq!(
            mark.message,
            format!(
                "[qhost] {} more log line(s) dropped: the log is over the store's limit of 10.0 KiB",
                1000 - kept.len()
            )
        );
        let mut small = vec![line("fine")];
        bound_logs(&mut small, 10_000);
        assert_eq!(small, vec![line("fine")]);
    }

    #[test]
    fn an_output_over_the_bound_ends_the_attempt_output_too_large() {
        let c = Completion {
            defer: None,
            task: 1,
            batch: 1,
            lease_token: 1,
            node: "n".into(),
            slot: None,
            started_at: 0,
            ended_at: 1,
            cpu_micros: None,
            memory_mib_seconds: None,
            http_bytes: None,
            outcome: Outcome::Succeeded,
            error: None,
            output: Some(vec![0; bounds::OUTPUT + 1]),
            logs: Vec::new(),
            stdout: vec![1; bounds::CAPTURE + 1],
            stderr: Vec::new(),
        }
        .bounded();
        assert_eq!((c.outcome, c.output), (Outcome::OutputTooLarge, None));
        assert!(c.error.unwrap().contains("over the store's limit"));
        assert_eq!(c.stdout.len(), bounds::CAPTURE);
    }
}
