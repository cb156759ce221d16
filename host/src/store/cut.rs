//! An attempt record cut short for lists and views: its error, log lines, stdout and stderr
//! each kept up to a number of bytes, and the fields cut named in the record's `cut`; and
//! a task's error (its last attempt's) cut alike, with a mark that says where it is whole.

use super::{AttemptRecord, TaskInfo};

impl TaskInfo {
    /// Cuts its error to at most `max` bytes, followed by a mark saying how much more there
    /// was and which route gives it whole.
    pub fn cut_error(&mut self, max: usize) {
        if let Some(error) = &mut self.error {
            // A list reads the error cut already; `error_size` says how long it is whole.
            let whole = self.error_size.map_or(error.len(), |n| n as usize);
            if whole > max {
                let kept = error.floor_char_boundary(max);
                let more = whole - kept;
                error.truncate(kept);
                error.push_str(&format!(
                    " [cut: {more} bytes more in GET /v1/tasks/{}/attempts/{}]",
                    self.id, self.attempts
                ));
            }
        }
    }
}

/// What a log line costs besides its message, as the runtime counts it.
const LINE_COST: usize = 64;

impl AttemptRecord {
    /// Cuts each long field to at most `max` bytes (log lines: whole lines, each costing
    /// its message and [`LINE_COST`]), naming those cut in `cut`.
    pub fn cut_to(&mut self, max: usize) {
        if let Some(error) = &mut self.error
            && error.len() > max
        {
            error.truncate(error.floor_char_boundary(max));
            // A page holds many cut records: each gives back what it no longer holds.
            error.shrink_to_fit();
            self.cut.push("error".into());
        }
        let mut spent = 0;
        let kept = self
            .logs
            .iter()
            .take_while(|line| {
                spent += line.message.len() + LINE_COST;
                spent <= max
            })
            .count();
        if kept < self.logs.len() {
            self.logs.truncate(kept);
            self.logs.shrink_to_fit();
            self.cut.push("logs".into());
        }
        for (name, bytes) in [("stdout", &mut self.stdout), ("stderr", &mut self.stderr)] {
            if bytes.len() > max {
                bytes.truncate(text_boundary(bytes, max));
                bytes.shrink_to_fit();
                self.cut.push(name.into());
            }
        }
    }
}

/// Where to cut `bytes` at `max` or before: at a character's start when they are UTF-8, so
/// that the text stays text.
fn text_boundary(bytes: &[u8], max: usize) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.floor_char_boundary(max),
        Err(_) => max,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{LogLevel, LogLine, Outcome};

    fn record() -> AttemptRecord {
        AttemptRecord {
            task: 1,
            batch: 1,
            module: crate::runtime::Digest::of(b"m"),
            module_name: None,
            attempt: 1,
            node: "n".into(),
            slot: None,
            group: None,
            order: 0,
            started_at: 0,
            ended_at: 1,
            cpu_micros: Some(1),
            memory_mib_seconds: Some(1.0),
            http_bytes: None,
            outcome: Outcome::Trap,
            error: Some("é".repeat(100)),
            logs: (0..10)
                .map(|i| LogLine {
                    at_micros: i,
                    level: LogLevel::Info,
                    message: "x".repeat(10),
                })
                .collect(),
            stdout: "ü".repeat(100).into_bytes(),
            stderr: b"short".to_vec(),
            cut: Vec::new(),
        }
    }

    #[test]
    fn long_fields_are_cut_at_whole_characters_and_lines_and_named() {
        let mut a = record();
        a.cut_to(101);
        assert_eq!(a.error.as_deref().unwrap().len(), 100);
        assert_eq!(a.logs.len(), 1);
        assert_eq!(a.stdout.len(), 100);
        assert!(std::str::from_utf8(&a.stdout).is_ok());
        assert_eq!(a.stderr, b"short");
        assert_eq!(a.cut, ["error", "logs", "stdout"]);

        let mut whole = record();
        whole.cut_to(1 << 20);
        assert!(whole.cut.is_empty());
    }
}
