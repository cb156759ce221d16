//! When a schedule's ticks fall: a cron expression (five fields, or six with seconds) read
//! in a named time zone, so that `0 9 * * *` in `Europe/Berlin` is nine o'clock there
//! across daylight-saving changes; and which of the ticks that came due to fire now.

use std::str::FromStr;

use croner::Cron;
use croner::parser::{CronParser, Seconds};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};

use crate::store::Micros;

/// A tick fired later than this after it was due was missed (no node ran at its time):
/// `catch_up` decides whether it still fires.
pub const MISSED_AFTER: Micros = 60_000_000;

/// A cron expression in a time zone.
#[derive(Debug, Clone)]
pub struct Timing {
    cron: Cron,
    zone: TimeZone,
}

impl Timing {
    /// Reads `cron` (e.g. `*/5 * * * *`, `0 0 9 * * MON-FRI`, `@daily`) in `timezone` (an
    /// IANA name such as `Europe/Berlin`, or `UTC`).
    pub fn new(cron: &str, timezone: &str) -> Result<Timing, String> {
        let zone = TimeZone::get(timezone).map_err(|_| {
            format!(
                "field `timezone`: `{timezone}` is not a time zone name like UTC or Europe/Berlin"
            )
        })?;
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .build()
            .parse(cron)
            .map_err(|e| {
                format!(
                    "field `cron`: `{cron}` is not a cron expression like `*/5 * * * *` \
                     (minute hour day month weekday, with seconds first if six fields): {e}"
                )
            })?;
        Ok(Timing { cron, zone })
    }

    /// The first tick strictly after `after`; none if the expression never matches again.
    /// (Ticks fall on whole seconds, and the search drops a fraction of `after`.)
    pub fn next_after(&self, after: Micros) -> Option<Micros> {
        let at = Timestamp::from_microsecond(after)
            .ok()?
            .to_zoned(self.zone.clone());
        let next = self.cron.find_next_occurrence(&at, false).ok()?;
        Some(next.timestamp().as_microsecond())
    }

    /// The last tick strictly before `before`.
    pub fn previous_before(&self, before: Micros) -> Option<Micros> {
        // Ticks fall on whole seconds, and the search drops a fraction: round up to keep
        // a tick in the second `before` falls in.
        let before = before.checked_add(999_999)?.div_euclid(1_000_000) * 1_000_000;
        let at = Timestamp::from_microsecond(before)
            .ok()?
            .to_zoned(self.zone.clone());
        let previous = self.cron.find_previous_occurrence(&at, false).ok()?;
        Some(previous.timestamp().as_microsecond())
    }
}

/// Whether a tick may fire while the batch of the schedule's last tick is still open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Overlap {
    /// The tick is recorded as skipped.
    #[default]
    Skip,
    /// The tick waits until that batch has ended, then fires; one tick waits at most, and
    /// ticks due meanwhile are skipped.
    Queue,
    /// The tick fires anyway.
    Allow,
}

/// What becomes of ticks missed while no node ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CatchUp {
    /// Missed ticks are skipped.
    #[default]
    None,
    /// The last missed tick fires.
    Last,
    /// The last N missed ticks fire, oldest first.
    All(u32),
}

impl FromStr for CatchUp {
    type Err = String;

    fn from_str(text: &str) -> Result<CatchUp, String> {
        let refuse = || {
            format!(
                "field `catch_up`: `{text}` is not one of `none`, `last` or `all:N` \
                 (N from 1 to {MAX_CATCH_UP})"
            )
        };
        Ok(match text {
            "none" => CatchUp::None,
            "last" => CatchUp::Last,
            _ => {
                let n: u32 = text
                    .strip_prefix("all:")
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(refuse)?;
                if !(1..=MAX_CATCH_UP).contains(&n) {
                    return Err(refuse());
                }
                CatchUp::All(n)
            }
        })
    }
}

impl std::fmt::Display for CatchUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CatchUp::None => f.write_str("none"),
            CatchUp::Last => f.write_str("last"),
            CatchUp::All(n) => write!(f, "all:{n}"),
        }
    }
}

/// The most missed ticks `catch_up` may fire at once.
pub const MAX_CATCH_UP: u32 = 100;

/// The most tasks catching up may open at once: `all:N` times the tasks of the plan. A
/// schedule asking more is refused at creation.
pub const MAX_CATCH_UP_TASKS: usize = 100_000;

/// The ticks due by `now`, starting from `next_due` (the schedule's first tick not yet
/// handled): which fire, oldest first; how many were missed and not fired; and the next
/// tick to wait for.
#[derive(Debug, PartialEq, Eq)]
pub struct Due {
    pub fire: Vec<Micros>,
    /// Counted up to [`MAX_COUNTED`]: a longer outage under a frequent schedule says so.
    pub missed: u64,
    pub next_due: Option<Micros>,
}

/// The most missed ticks counted at once.
pub const MAX_COUNTED: u64 = 100_000;

/// Ticks from `next_due` up to `now`: one within [`MISSED_AFTER`] of `now` is on time and
/// fires; older ones were missed, and the last of them fire as `catch_up` says.
pub fn due(timing: &Timing, next_due: Micros, now: Micros, catch_up: CatchUp) -> Due {
    let keep = match catch_up {
        CatchUp::None => 0,
        CatchUp::Last => 1,
        CatchUp::All(n) => n as usize,
    };
    let missed_until = now - MISSED_AFTER;
    // The last missed ticks, found walking back from the end of the missed span.
    let mut fire = Vec::new();
    let mut at = missed_until + 1;
    while fire.len() < keep {
        match timing.previous_before(at) {
            Some(tick) if tick >= next_due => {
                fire.push(tick);
                at = tick;
            }
            _ => break,
        }
    }
    fire.reverse();
    // Every missed tick not fired, counted walking forward.
    let mut missed = 0u64;
    let mut tick = Some(next_due);
    while let Some(at) = tick.filter(|&at| at <= missed_until && missed < MAX_COUNTED) {
        missed += 1;
        tick = timing.next_after(at);
    }
    missed = missed.saturating_sub(fire.len() as u64);
    // The ticks on time.
    let mut tick = if next_due > missed_until {
        Some(next_due)
    } else {
        timing.next_after(missed_until)
    };
    while let Some(at) = tick.filter(|&at| at <= now) {
        fire.push(at);
        tick = timing.next_after(at);
    }
    Due {
        fire,
        missed,
        next_due: tick,
    }
}
