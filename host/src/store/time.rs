//! Time as the stores keep it: microseconds since the Unix epoch, read from this
//! process's clock (with a deliberate skew for tests of badly synchronized nodes).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Microseconds since the Unix epoch.
pub type Micros = i64;

pub fn now_micros() -> Micros {
    to_micros(SystemTime::now())
}

pub fn to_micros(time: SystemTime) -> Micros {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as Micros)
        .unwrap_or(0)
        + clock_skew()
}

/// A deliberate error added to this process's clock, from `QHOST_CLOCK_SKEW_MS`: lets
/// tests run a node whose clock is off, as a badly synchronized machine's would be.
fn clock_skew() -> Micros {
    static SKEW: std::sync::OnceLock<Micros> = std::sync::OnceLock::new();
    *SKEW.get_or_init(|| {
        std::env::var("QHOST_CLOCK_SKEW_MS")
            .ok()
            .and_then(|ms| ms.trim().parse::<i64>().ok())
            .map_or(0, |ms| ms.saturating_mul(1000))
    })
}

pub fn duration_micros(d: Duration) -> Micros {
    d.as_micros().try_into().unwrap_or(Micros::MAX)
}
