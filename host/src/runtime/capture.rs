//! Bounded in-memory capture of a task's stdout, stderr and log lines.
//!
//! A task that writes too much is not failed for it: the first bytes up to the limit are
//! kept, the rest is counted and dropped, and the guest never sees a write error.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use super::limits::{LOG_LINE_COST, MAX_LOG_LINES};
use super::outcome::{Captured, LogLevel, LogLine};

/// What a guest may write at once: big enough for few host calls, small enough to keep
/// the copy bounded.
const WRITE_PERMIT: usize = 64 * 1024;

/// A stdout or stderr that keeps at most `limit` bytes. Clones share one buffer.
#[derive(Clone)]
pub(crate) struct OutputCapture {
    shared: Arc<Mutex<CaptureBuffer>>,
}

struct CaptureBuffer {
    kept: Vec<u8>,
    limit: usize,
    dropped: u64,
}

impl CaptureBuffer {
    fn push(&mut self, bytes: &[u8]) {
        let room = self.limit - self.kept.len();
        let keep = bytes.len().min(room);
        self.kept.extend_from_slice(&bytes[..keep]);
        self.dropped += (bytes.len() - keep) as u64;
    }
}

impl OutputCapture {
    pub(crate) fn new(limit: u64) -> Self {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        OutputCapture {
            shared: Arc::new(Mutex::new(CaptureBuffer {
                kept: Vec::new(),
                limit,
                dropped: 0,
            })),
        }
    }

    fn push(&self, bytes: &[u8]) {
        self.shared.lock().expect("capture lock").push(bytes);
    }

    /// Takes what was captured so far.
    pub(crate) fn take(&self) -> Captured {
        let mut buffer = self.shared.lock().expect("capture lock");
        Captured {
            bytes: std::mem::take(&mut buffer.kept),
            dropped: std::mem::take(&mut buffer.dropped),
        }
    }
}

impl IsTerminal for OutputCapture {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for OutputCapture {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for OutputCapture {
    async fn ready(&mut self) {}
}

impl OutputStream for OutputCapture {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_PERMIT)
    }
}

impl AsyncWrite for OutputCapture {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// The lines a task logs through `qhost:task/host.log`, kept up to a byte budget in which
/// every line costs [`LOG_LINE_COST`] besides its message, and up to [`MAX_LOG_LINES`].
pub(crate) struct LogCapture {
    started: Instant,
    budget: usize,
    pub(crate) lines: Vec<LogLine>,
    pub(crate) dropped: u64,
}

impl LogCapture {
    pub(crate) fn new(budget: u64, started: Instant) -> Self {
        LogCapture {
            started,
            budget: usize::try_from(budget).unwrap_or(usize::MAX),
            lines: Vec::new(),
            dropped: 0,
        }
    }

    pub(crate) fn push(&mut self, level: LogLevel, message: String) {
        let cost = message.len().saturating_add(LOG_LINE_COST as usize);
        if cost > self.budget || self.lines.len() >= MAX_LOG_LINES {
            self.dropped += 1;
            return;
        }
        self.budget -= cost;
        let at_micros = self
            .started
            .elapsed()
            .as_micros()
            .try_into()
            .unwrap_or(u64::MAX);
        self.lines.push(LogLine {
            at_micros,
            level,
            message,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_beyond_the_limit_is_counted_not_kept() {
        let capture = OutputCapture::new(5);
        capture.push(b"hello world");
        capture.push(b"!");
        let captured = capture.take();
        assert_eq!(captured.bytes, b"hello");
        assert_eq!(captured.dropped, 7);
    }

    #[test]
    fn log_lines_beyond_the_budget_are_counted() {
        let mut log = LogCapture::new(2 * LOG_LINE_COST + 10, Instant::now());
        log.push(LogLevel::Info, "12345".into());
        log.push(LogLevel::Warn, "123456".into());
        log.push(LogLevel::Info, "1234".into());
        assert_eq!(log.lines.len(), 2);
        assert_eq!(log.dropped, 1);
    }

    #[test]
    fn empty_lines_cost_their_share_and_their_number_is_capped() {
        let mut log = LogCapture::new(10 * LOG_LINE_COST, Instant::now());
        for _ in 0..1000 {
            log.push(LogLevel::Info, String::new());
        }
        assert_eq!((log.lines.len(), log.dropped), (10, 990));
        let mut log = LogCapture::new(u64::MAX, Instant::now());
        for _ in 0..MAX_LOG_LINES + 5 {
            log.push(LogLevel::Info, String::new());
        }
        assert_eq!((log.lines.len(), log.dropped), (MAX_LOG_LINES, 5));
    }
}
