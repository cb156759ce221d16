//! What a run may use of its tenant's budget, and where the run ends once it used it:
//! CPU time at the first poll past it ([`super::cpu::Timed`]), HTTP bytes at the body
//! chunk that crosses it ([`super::http_gate::HttpLedger`]), and memory-time at the
//! moment the memory held reaches it. Memory is held while the guest sleeps too, so that
//! moment is a deadline: the memory held so far plus the size now times the time to come.
//! Wasm memory only grows, and each growth moves the deadline nearer; [`MemoryClock`]
//! carries each growth from the limiter to the run's watch.

use std::time::{Duration, Instant};

use tokio::sync::watch;

/// What a run may use; none: that meter is not bounded.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RunBudget {
    pub cpu: Option<Duration>,
    pub memory_mib_seconds: Option<f64>,
    pub http_bytes: Option<u64>,
}

/// Which of its budget a run used up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Used {
    Cpu(Duration),
    Memory(f64),
    Http(u64),
}

impl Used {
    /// The attempt's error: what it used, and what follows for its tenant.
    pub(crate) fn message(self) -> String {
        let what = match self {
            Used::Cpu(cpu) => format!("{} of CPU time", humantime::format_duration(cpu)),
            Used::Memory(mib_seconds) => format!("{mib_seconds:.3} MiB-seconds of memory"),
            Used::Http(bytes) => format!("{} of HTTP bodies", bytesize::ByteSize(bytes)),
        };
        format!(
            "used the {what} its tenant's budget had left; the tenant's tasks wait for the \
             budget's next window"
        )
    }
}

/// The memory a run holds, as its limiter last changed it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Held {
    /// Byte-seconds held up to `since`.
    pub(crate) byte_seconds: f64,
    pub(crate) since: Instant,
    /// Bytes held from `since` on.
    pub(crate) bytes: usize,
}

impl Held {
    /// Byte-seconds held up to `at`.
    pub(crate) fn at(&self, at: Instant) -> f64 {
        self.byte_seconds
            + self.bytes as f64 * at.saturating_duration_since(self.since).as_secs_f64()
    }

    /// When the byte-seconds held reach `cap`, at the size held now; none: never.
    fn reaches(&self, cap: f64) -> Option<Instant> {
        let left = cap - self.byte_seconds;
        if left <= 0.0 {
            return Some(self.since);
        }
        let after = Duration::try_from_secs_f64(left / self.bytes as f64).ok()?;
        self.since.checked_add(after)
    }
}

/// The sending half: the limiter tells each growth.
pub(crate) type MemoryClock = watch::Sender<Held>;

/// A clock that starts at `start` with nothing held.
pub(crate) fn memory_clock(start: Instant) -> MemoryClock {
    watch::Sender::new(Held {
        byte_seconds: 0.0,
        since: start,
        bytes: 0,
    })
}

const MIB: f64 = 1024.0 * 1024.0;

/// Ends when the memory held reaches `mib_seconds`; never without a cap.
pub(crate) async fn memory_spent(mut held: watch::Receiver<Held>, mib_seconds: Option<f64>) {
    let Some(cap) = mib_seconds.map(|m| m * MIB) else {
        return std::future::pending().await;
    };
    loop {
        let at = held.borrow_and_update().reaches(cap);
        let deadline = async {
            match at {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = deadline => return,
            changed = held.changed() => {
                if changed.is_err() {
                    // The run is over: its limiter is gone.
                    return std::future::pending().await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_reaches_its_cap_at_its_time_at_size_and_growth_brings_that_nearer() {
        let start = Instant::now();
        // 2 MiB-seconds: 1 MiB held reaches them after 2 s.
        let one = Held {
            byte_seconds: 0.0,
            since: start,
            bytes: MIB as usize,
        };
        let cap = 2.0 * MIB;
        assert_eq!(one.reaches(cap), Some(start + Duration::from_secs(2)));
        // At 0.5 s it grows to 3 MiB: 1.5 MiB-s left at 3 MiB is 0.5 s more.
        let half = start + Duration::from_millis(500);
        let three = Held {
            byte_seconds: one.at(half),
            since: half,
            bytes: 3 * MIB as usize,
        };
        let at = three.reaches(cap).unwrap();
        let off = at.duration_since(start + Duration::from_secs(1));
        assert!(off < Duration::from_micros(1), "{off:?} off");
        // Past the cap already: now.
        assert_eq!(three.reaches(MIB / 4.0), Some(half));
    }

    #[test]
    fn nothing_held_never_reaches_a_cap() {
        let held = Held {
            byte_seconds: 0.0,
            since: Instant::now(),
            bytes: 0,
        };
        assert_eq!(held.reaches(1.0), None);
        assert!(Used::Http(2_000).message().contains("of HTTP bodies"));
    }
}
