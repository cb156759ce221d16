//! A tenant's budget: per `period`, at most `cpu` of CPU time, `memory_mib_seconds` of
//! memory held over time, and `http_bytes` of HTTP bodies sent and received, each as the
//! sandbox measures an attempt (`runtime/cpu.rs`, `runtime/limits.rs`,
//! `runtime/http_gate.rs`). A budget names one or more of them. Periods are windows
//! aligned to the Unix epoch, so a `1d` budget renews at midnight UTC on every node alike.
//!
//! Both drivers keep, beside the budget, the window their last completion counted in
//! (`budget_window`), what was used in it ([`Spent`]), and `held_until`: when a completion
//! brings the window's use of any meter to its budget, the tenant is held to the window's
//! end, and the claim gives it no room until then (as [`super::hold`] does a group). A
//! task claimed meanwhile is given what its tenant has left of each ([`Left`]), at which
//! the runtime ends it with outcome `budget`.
//!
//! The statements that count a window in SQL state [`window`], [`Window::used_at`] and
//! [`Window::spent`] again (`complete_free_tenant*.sql` of each driver, and each driver's
//! `tenant_budget` / `tenant_set`): keep them together.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Micros, duration_micros};

/// The least CPU a budget gives per period.
pub const MIN_BUDGET_CPU: Duration = Duration::from_millis(1);
/// The shortest period a budget takes.
pub const MIN_BUDGET_PERIOD: Duration = Duration::from_secs(1);
/// The longest period a budget takes: a year.
pub const MAX_BUDGET_PERIOD: Duration = Duration::from_secs(366 * 24 * 3600);
/// The most memory-time a budget gives per period: a TiB held for a year.
pub const MAX_BUDGET_MEMORY: u64 = 1024 * 1024 * 366 * 24 * 3600;
/// The most HTTP bytes a budget gives per period: a PB.
pub const MAX_BUDGET_HTTP: u64 = 1_000_000_000_000_000;

/// What a tenant's attempts may use per period; a meter left out is not bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// The period, as a duration, 1s to a year; windows start at multiples of it from
    /// the Unix epoch.
    #[serde(with = "crate::units::duration_text")]
    #[schema(value_type = String, example = "1h")]
    pub period: Duration,
    /// CPU time per period, as a duration (`500ms`, `10s`, `2h`), at least 1ms and at
    /// most the period; null: not bounded (so for the meters below).
    #[serde(default, with = "crate::units::duration_text::option")]
    #[schema(value_type = Option<String>, example = "10s", required = true)]
    pub cpu: Option<Duration>,
    /// Memory held over time per period, in MiB-seconds (64 MiB for a minute: 3840).
    #[serde(default)]
    #[schema(required = true)]
    pub memory_mib_seconds: Option<u64>,
    /// HTTP body bytes sent and received per period.
    #[serde(default)]
    #[schema(required = true)]
    pub http_bytes: Option<u64>,
}

impl Budget {
    /// Refuses a budget out of bounds, naming the field.
    pub fn check(&self) -> Result<(), String> {
        let text = |d: Duration| humantime::format_duration(d).to_string();
        if !(MIN_BUDGET_PERIOD..=MAX_BUDGET_PERIOD).contains(&self.period) {
            return Err(format!(
                "field `budget.period` is {}: it takes 1s to 366d",
                text(self.period)
            ));
        }
        if self.cpu.is_none() && self.memory_mib_seconds.is_none() && self.http_bytes.is_none() {
            return Err(
                "field `budget` names no meter: give it `cpu`, `memory_mib_seconds` or \
                 `http_bytes` (or null for no budget)"
                    .into(),
            );
        }
        if let Some(cpu) = self.cpu
            && !(MIN_BUDGET_CPU..=self.period).contains(&cpu)
        {
            return Err(format!(
                "field `budget.cpu` is {}: it takes 1ms to its period ({})",
                text(cpu),
                text(self.period)
            ));
        }
        if let Some(memory) = self.memory_mib_seconds
            && !(1..=MAX_BUDGET_MEMORY).contains(&memory)
        {
            return Err(format!(
                "field `budget.memory_mib_seconds` is {memory}: it takes 1 to \
                 {MAX_BUDGET_MEMORY}"
            ));
        }
        if let Some(http) = self.http_bytes
            && !(1..=MAX_BUDGET_HTTP).contains(&http)
        {
            return Err(format!(
                "field `budget.http_bytes` is {http}: it takes 1 to {MAX_BUDGET_HTTP}"
            ));
        }
        Ok(())
    }

    /// Parses `METERS/PERIOD`, where METERS is `cpu=DURATION`, `memory=MIB_SECONDS` (or
    /// `SIZE*DURATION`) and `http=SIZE`, joined by commas; a bare duration is CPU:
    /// `10s/1h`, `cpu=10s,memory=1GiB*1m,http=100MB/1h`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (meters, period) = text.trim().rsplit_once('/').ok_or_else(|| {
            format!(
                "`{text}` is not a budget like 10s/1h or cpu=10s,memory=1GiB*1m,http=100MB/1h \
                 (what / period)"
            )
        })?;
        let mut budget = Budget {
            period: crate::units::parse_duration(period.trim())?,
            cpu: None,
            memory_mib_seconds: None,
            http_bytes: None,
        };
        for meter in meters.split(',').map(str::trim) {
            match meter.split_once('=') {
                None => budget.cpu = Some(crate::units::parse_duration(meter)?),
                Some(("cpu", v)) => budget.cpu = Some(crate::units::parse_duration(v.trim())?),
                Some(("memory", v)) => budget.memory_mib_seconds = Some(parse_memory(v.trim())?),
                Some(("http", v)) => budget.http_bytes = Some(crate::units::parse_bytes(v.trim())?),
                Some((other, _)) => {
                    return Err(format!(
                        "`{other}` is not a meter of a budget: it takes cpu, memory and http"
                    ));
                }
            }
        }
        budget.check()?;
        Ok(budget)
    }

    /// The stored amounts: CPU in microseconds, memory in MiB-milliseconds, HTTP in bytes.
    pub fn limits(&self) -> Spent {
        let stored = |v: Option<u64>, scale: u64| {
            v.map_or(i64::MAX, |v| {
                i64::try_from(v.saturating_mul(scale)).unwrap_or(i64::MAX)
            })
        };
        Spent {
            cpu_micros: self.cpu.map_or(i64::MAX, duration_micros),
            memory_mib_ms: stored(self.memory_mib_seconds, 1000),
            http_bytes: stored(self.http_bytes, 1),
        }
    }

    /// The columns `budget_period`, `cpu_budget`, `memory_budget`, `http_budget` of a
    /// tenant with `budget` (all NULL: none; a meter it leaves out: NULL).
    pub fn columns(budget: Option<Self>) -> [Option<i64>; 4] {
        let Some(b) = budget else {
            return [None; 4];
        };
        let l = b.limits();
        [
            Some(duration_micros(b.period)),
            b.cpu.map(|_| l.cpu_micros),
            b.memory_mib_seconds.map(|_| l.memory_mib_ms),
            b.http_bytes.map(|_| l.http_bytes),
        ]
    }

    /// The budget a tenant's stored columns (as [`Budget::columns`] writes them) name.
    pub fn from_stored(columns: [Option<i64>; 4]) -> Option<Self> {
        let [period, cpu, memory, http] = columns;
        let whole = |v: Option<i64>| v.and_then(|v| u64::try_from(v).ok());
        Some(Budget {
            period: Duration::from_micros(whole(period)?),
            cpu: whole(cpu).map(Duration::from_micros),
            memory_mib_seconds: whole(memory).map(|v| v / 1000),
            http_bytes: whole(http),
        })
    }
}

/// `MIB_SECONDS` or `SIZE*DURATION`, in MiB-seconds.
fn parse_memory(text: &str) -> Result<u64, String> {
    if let Ok(n) = text.parse::<u64>() {
        return Ok(n);
    }
    let (size, time) = text
        .split_once('*')
        .ok_or_else(|| format!("`{text}` is not memory-time like 3840 (MiB-seconds) or 1GiB*1h"))?;
    let bytes = crate::units::parse_bytes(size.trim())?;
    let seconds = crate::units::parse_duration(time.trim())?.as_secs_f64();
    Ok((bytes as f64 / (1024.0 * 1024.0) * seconds).ceil() as u64)
}

/// What attempts used, in each meter's stored unit: CPU in microseconds, memory in
/// MiB-milliseconds, HTTP in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spent {
    pub cpu_micros: i64,
    pub memory_mib_ms: i64,
    pub http_bytes: i64,
}

impl Spent {
    /// Memory in MiB-milliseconds, rounded up, of `mib_seconds`.
    pub fn memory(mib_seconds: f64) -> i64 {
        (mib_seconds * 1000.0).ceil() as i64
    }

    fn add(self, other: Spent) -> Spent {
        Spent {
            cpu_micros: self.cpu_micros.saturating_add(other.cpu_micros),
            memory_mib_ms: self.memory_mib_ms.saturating_add(other.memory_mib_ms),
            http_bytes: self.http_bytes.saturating_add(other.http_bytes),
        }
    }
}

/// What a tenant's attempts used in its budget's current window, as the API shows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BudgetUsed {
    /// CPU time, in microseconds.
    pub cpu_micros: u64,
    /// Memory held over time, in MiB-seconds.
    pub memory_mib_seconds: f64,
    /// HTTP body bytes sent and received.
    pub http_bytes: u64,
}

impl From<Spent> for BudgetUsed {
    fn from(s: Spent) -> Self {
        BudgetUsed {
            cpu_micros: s.cpu_micros.max(0) as u64,
            memory_mib_seconds: s.memory_mib_ms.max(0) as f64 / 1000.0,
            http_bytes: s.http_bytes.max(0) as u64,
        }
    }
}

/// What a task claimed is given of its tenant's budget: the run ends with outcome
/// `budget` once it used any of them. None: that meter is not bounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Left {
    pub cpu_micros: Option<Micros>,
    pub memory_mib_ms: Option<i64>,
    pub http_bytes: Option<i64>,
}

/// The start of the window of `period` that holds `now`.
pub fn window(period: Micros, now: Micros) -> Micros {
    now - now.rem_euclid(period.max(1))
}

/// A tenant's budget columns as a driver read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub budget: Option<Budget>,
    /// The window its last completion counted in.
    pub start: Micros,
    /// What its attempts used in that window.
    pub used: Spent,
}

impl Window {
    /// No budget, nothing used.
    pub const NONE: Window = Window {
        budget: None,
        start: 0,
        used: Spent {
            cpu_micros: 0,
            memory_mib_ms: 0,
            http_bytes: 0,
        },
    };

    /// What was used in the window that holds `now`: nothing once a later one started.
    pub fn used_at(&self, now: Micros) -> Spent {
        match self.budget {
            Some(b) if self.start == window(duration_micros(b.period), now) => self.used,
            _ => Spent::default(),
        }
    }

    /// What is left at `now` for a task claimed then.
    pub fn left(&self, now: Micros) -> Left {
        let Some(budget) = self.budget else {
            return Left::default();
        };
        let (limit, used) = (budget.limits(), self.used_at(now));
        let left = |limit: i64, used: i64| (limit != i64::MAX).then(|| (limit - used).max(0));
        Left {
            cpu_micros: left(limit.cpu_micros, used.cpu_micros),
            memory_mib_ms: left(limit.memory_mib_ms, used.memory_mib_ms),
            http_bytes: left(limit.http_bytes, used.http_bytes),
        }
    }

    /// Whether any meter's use reached its budget at `now`.
    pub fn spent(&self, now: Micros) -> bool {
        let left = self.left(now);
        [left.cpu_micros, left.memory_mib_ms, left.http_bytes].contains(&Some(0))
    }

    /// Counts `used` at `now`: in the window that holds it, a later one starting afresh.
    pub fn charge(&mut self, used: Spent, now: Micros) {
        let Some(b) = self.budget else {
            *self = Window::NONE;
            return;
        };
        self.used = self.used_at(now).add(used);
        self.start = window(duration_micros(b.period), now);
    }

    /// When the window that holds `now` ends; none without a budget.
    pub fn end(&self, now: Micros) -> Option<Micros> {
        let period = duration_micros(self.budget?.period);
        Some(window(period, now) + period)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_renews_at_each_window_of_its_period() {
        let budget = Budget::parse("10ms/1s").unwrap();
        let w = Window {
            budget: Some(budget),
            start: 5_000_000,
            used: Spent {
                cpu_micros: 4_000,
                ..Spent::default()
            },
        };
        assert_eq!(window(1_000_000, 5_999_999), 5_000_000);
        assert_eq!(w.left(5_500_000).cpu_micros, Some(6_000));
        assert_eq!(w.left(5_500_000).http_bytes, None, "not bounded");
        // The next window starts afresh.
        assert_eq!(w.left(6_000_000).cpu_micros, Some(10_000));
        let mut spent = w;
        spent.charge(
            Spent {
                cpu_micros: 8_000,
                ..Spent::default()
            },
            5_700_000,
        );
        assert!(spent.spent(5_700_000) && !spent.spent(6_000_000));
        assert_eq!(spent.end(5_700_000), Some(6_000_000));
        let none = Window { budget: None, ..w };
        assert_eq!(none.left(5_500_000), Left::default());
    }

    #[test]
    fn any_meter_at_its_budget_spends_it() {
        let budget = Budget::parse("memory=1MiB*2s,http=1kB/1m").unwrap();
        assert_eq!(budget.cpu, None);
        assert_eq!(budget.memory_mib_seconds, Some(2));
        assert_eq!(budget.http_bytes, Some(1000));
        let mut w = Window {
            budget: Some(budget),
            ..Window::NONE
        };
        w.charge(
            Spent {
                cpu_micros: 1_000_000_000,
                memory_mib_ms: 1_999,
                http_bytes: 0,
            },
            0,
        );
        assert!(!w.spent(0), "CPU is not bounded, memory has 1 MiB-ms left");
        assert_eq!(w.left(0).memory_mib_ms, Some(1));
        w.charge(
            Spent {
                memory_mib_ms: 1,
                ..Spent::default()
            },
            1,
        );
        assert!(w.spent(1));
        assert_eq!(
            Budget::from_stored(Budget::columns(Some(budget))),
            Some(budget)
        );
    }

    #[test]
    fn a_budget_out_of_bounds_names_its_field() {
        for (text, field) in [
            ("2h/1h", "budget.cpu"),
            ("0s/1h", "budget.cpu"),
            ("1ms/500ms", "budget.period"),
            ("1s/400d", "budget.period"),
            ("memory=0/1h", "budget.memory_mib_seconds"),
            ("http=0/1h", "budget.http_bytes"),
            ("disk=1/1h", "disk"),
        ] {
            let err = Budget::parse(text).unwrap_err();
            assert!(err.contains(field), "{text}: {err}");
        }
        assert!(Budget::parse("10s").unwrap_err().contains("10s/1h"));
    }
}
