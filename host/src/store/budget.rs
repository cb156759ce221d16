//! A tenant's CPU budget: at most `cpu` of CPU time per `period`, as the sandbox measures
//! each attempt (`runtime/cpu.rs`). Periods are windows aligned to the Unix epoch, so a
//! `1d` budget renews at midnight UTC on every node alike.
//!
//! Both drivers keep, beside the budget, the window their last completion counted in
//! (`budget_window`), the CPU used in it (`budget_used`), and `held_until`: when a
//! completion brings the window's use to the budget, the tenant is held to the window's
//! end, and the claim gives it no room until then (as [`super::hold`] does a group). A
//! task claimed meanwhile is given the CPU its tenant has left, at which the runtime ends
//! it with outcome `budget`.
//!
//! The statements that count a window in SQL state [`window`] and [`Window::used_at`]
//! again (`complete_free_tenant*.sql` of each driver, and each driver's `tenant_set`):
//! keep them together.

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

/// At most `cpu` of CPU time per `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CpuBudget {
    /// CPU time per period, as a duration (`500ms`, `10s`, `2h`), at least 1ms and at
    /// most the period.
    #[serde(with = "crate::units::duration_text")]
    #[schema(value_type = String, example = "10s")]
    pub cpu: Duration,
    /// The period, as a duration, 1s to a year; windows start at multiples of it from
    /// the Unix epoch.
    #[serde(with = "crate::units::duration_text")]
    #[schema(value_type = String, example = "1h")]
    pub period: Duration,
}

impl CpuBudget {
    /// Refuses a budget out of bounds, naming the field.
    pub fn check(&self) -> Result<(), String> {
        let text = |d: Duration| humantime::format_duration(d).to_string();
        if !(MIN_BUDGET_PERIOD..=MAX_BUDGET_PERIOD).contains(&self.period) {
            return Err(format!(
                "field `cpu_budget.period` is {}: it takes 1s to 366d",
                text(self.period)
            ));
        }
        if !(MIN_BUDGET_CPU..=self.period).contains(&self.cpu) {
            return Err(format!(
                "field `cpu_budget.cpu` is {}: it takes 1ms to its period ({})",
                text(self.cpu),
                text(self.period)
            ));
        }
        Ok(())
    }

    /// Parses `CPU/PERIOD`: `10s/1h`, `500ms/1m`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (cpu, period) = text.trim().split_once('/').ok_or_else(|| {
            format!("`{text}` is not a budget like 10s/1h or 500ms/1m (CPU time / period)")
        })?;
        let budget = CpuBudget {
            cpu: crate::units::parse_duration(cpu.trim())?,
            period: crate::units::parse_duration(period.trim())?,
        };
        budget.check()?;
        Ok(budget)
    }

    /// The columns `cpu_budget`, `budget_period` (microseconds) of a tenant with `budget`.
    pub fn columns(budget: Option<Self>) -> (Option<Micros>, Option<Micros>) {
        match budget {
            Some(b) => (
                Some(duration_micros(b.cpu)),
                Some(duration_micros(b.period)),
            ),
            None => (None, None),
        }
    }

    /// The budget a tenant's stored columns name; none when it has none.
    pub fn from_stored(cpu: Option<Micros>, period: Option<Micros>) -> Option<Self> {
        Some(CpuBudget {
            cpu: Duration::from_micros(u64::try_from(cpu?).ok()?),
            period: Duration::from_micros(u64::try_from(period?).ok()?),
        })
    }
}

/// The start of the window of `period` that holds `now`.
pub fn window(period: Micros, now: Micros) -> Micros {
    now - now.rem_euclid(period.max(1))
}

/// A tenant's budget columns as a driver read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub budget: Option<CpuBudget>,
    /// The window its last completion counted in.
    pub start: Micros,
    /// The CPU its attempts used in that window, in microseconds.
    pub used: Micros,
}

impl Window {
    /// The CPU used in the window that holds `now`: none once a later one started.
    pub fn used_at(&self, now: Micros) -> Micros {
        match self.budget {
            Some(b) if self.start == window(duration_micros(b.period), now) => self.used,
            _ => 0,
        }
    }

    /// The CPU left at `now` for a task claimed then; none without a budget.
    pub fn left(&self, now: Micros) -> Option<Micros> {
        let budget = self.budget?;
        Some((duration_micros(budget.cpu) - self.used_at(now)).max(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_renews_at_each_window_of_its_period() {
        let budget = CpuBudget::parse("10ms/1s").unwrap();
        let w = Window {
            budget: Some(budget),
            start: 5_000_000,
            used: 4_000,
        };
        assert_eq!(window(1_000_000, 5_999_999), 5_000_000);
        assert_eq!(w.left(5_500_000), Some(6_000));
        // The next window starts afresh.
        assert_eq!(w.left(6_000_000), Some(10_000));
        let spent = Window { used: 12_000, ..w };
        assert_eq!(spent.left(5_500_000), Some(0));
        let none = Window { budget: None, ..w };
        assert_eq!(none.left(5_500_000), None);
    }

    #[test]
    fn a_budget_out_of_bounds_names_its_field() {
        for (text, field) in [
            ("2h/1h", "cpu_budget.cpu"),
            ("0s/1h", "cpu_budget.cpu"),
            ("1ms/500ms", "cpu_budget.period"),
            ("1s/400d", "cpu_budget.period"),
        ] {
            let err = CpuBudget::parse(text).unwrap_err();
            assert!(err.contains(field), "{text}: {err}");
        }
        assert!(CpuBudget::parse("10s").unwrap_err().contains("10s/1h"));
    }
}
