//! A group's rate: how many of its tasks may be claimed per period, beside its limit on
//! how many run at once. Both drivers and the model keep it the same way, as the generic
//! cell rate algorithm (GCRA) does a token bucket: one time per group, its "theoretical
//! arrival time" (`tat`), which a claim of `n` tasks moves `n` intervals on from the
//! later of itself and now. A group then has as many tokens as intervals fit between now
//! plus the burst's tolerance and its `tat`. The claim reads and moves it in the
//! transaction that claims, under the group row's lock on PostgreSQL, so a rate holds
//! exactly across nodes and restarts.
//!
//! A task may cost more than one token (`cost`, 1 by default): the claim takes it while
//! its group has a token left, and moves `tat` on by its whole cost. A task dearer than
//! the tokens left, or than the burst, is not starved: it overdraws the bucket, and the
//! group's next tasks wait until the debt is paid. Over any span, the tokens spent stay
//! within the rate's, plus its burst, plus one task's cost.
//!
//! The statements that move `tat` in SQL state [`Bucket::take`] again
//! (`claim_count_groups.sql`, the SQLite claim's group counter): keep them together.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::pick::GroupRoom;
use super::{Micros, duration_micros};

/// The most tasks a rate lets through per period, and the largest burst.
pub const MAX_RATE: u32 = 1_000_000;
/// The most tokens one task may cost.
pub const MAX_COST: u32 = MAX_RATE;
/// The shortest period a rate takes.
pub const MIN_PERIOD: Duration = Duration::from_millis(1);
/// The longest period a rate takes: a year.
pub const MAX_PERIOD: Duration = Duration::from_secs(366 * 24 * 3600);

fn one() -> u32 {
    1
}

/// A group's rate: at most `limit` of its tasks claimed per `period`, and at most `burst`
/// at once after a quiet spell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupRate {
    /// Tasks claimed per period, 1 to 1,000,000.
    #[serde(deserialize_with = "crate::whole::int")]
    #[schema(format = Int64, minimum = 1, maximum = 1000000)]
    pub limit: u32,
    /// The period, as a duration (`1s`, `1m`, `1h`), 1ms to a year.
    #[serde(with = "crate::units::duration_text")]
    #[schema(value_type = String, example = "1s")]
    pub period: Duration,
    /// Most tasks claimed at once after a quiet spell, 1 to 1,000,000; a request may leave
    /// it out for 1, which spreads the tasks evenly over the period. Every answer has it.
    #[serde(default = "one", deserialize_with = "crate::whole::int")]
    #[schema(format = Int64, minimum = 1, maximum = 1000000, default = 1, required = true)]
    pub burst: u32,
}

impl GroupRate {
    /// Refuses a rate out of bounds, naming the field.
    pub fn check(&self) -> Result<(), String> {
        if !(1..=MAX_RATE).contains(&self.limit) {
            return Err(format!(
                "`rate.limit` is {}: it takes 1 to {MAX_RATE} tasks per period",
                self.limit
            ));
        }
        if !(1..=MAX_RATE).contains(&self.burst) {
            return Err(format!(
                "`rate.burst` is {}: it takes 1 to {MAX_RATE} tasks",
                self.burst
            ));
        }
        if !(MIN_PERIOD..=MAX_PERIOD).contains(&self.period) {
            return Err(format!(
                "`rate.period` is {}: it takes 1ms to 366d",
                humantime::format_duration(self.period)
            ));
        }
        Ok(())
    }

    /// The period in microseconds, as stored.
    pub fn period_micros(&self) -> Micros {
        duration_micros(self.period)
    }

    /// The rate as stored: limit, period in microseconds, burst.
    pub fn stored(&self) -> (i64, i64, i64) {
        (
            i64::from(self.limit),
            self.period_micros(),
            i64::from(self.burst),
        )
    }

    /// The columns `rate_limit`, `rate_period`, `rate_burst` of a group with `rate`.
    pub fn columns(rate: Option<Self>) -> (Option<i64>, Option<i64>, Option<i64>) {
        match rate.map(|r| r.stored()) {
            Some((limit, period, burst)) => (Some(limit), Some(period), Some(burst)),
            None => (None, None, None),
        }
    }

    /// The rate a group's stored columns name; none when it has none.
    pub fn from_stored(
        limit: Option<i64>,
        period: Option<i64>,
        burst: Option<i64>,
    ) -> Option<Self> {
        Some(GroupRate {
            limit: u32::try_from(limit?).ok()?,
            period: Duration::from_micros(u64::try_from(period?).ok()?),
            burst: u32::try_from(burst?).ok()?,
        })
    }

    /// Its bucket at the stored `tat`.
    pub fn bucket(&self, tat: Micros) -> Bucket {
        let (limit, period, burst) = self.stored();
        Bucket::new(limit, period, burst, tat)
    }

    /// Parses `5/s`, `1000/h`, `10/30s`: a count per a unit or a duration.
    pub fn parse(text: &str, burst: u32) -> Result<Self, String> {
        let (limit, per) = text.trim().split_once('/').ok_or_else(|| {
            format!("`{text}` is not a rate like 5/s, 1000/h or 10/30s (tasks / period)")
        })?;
        let limit: u32 = limit
            .trim()
            .parse()
            .map_err(|_| format!("`{text}`: `{limit}` is not a whole number of tasks"))?;
        let per = per.trim();
        let period = match per {
            "s" | "sec" | "second" => Duration::from_secs(1),
            "m" | "min" | "minute" => Duration::from_secs(60),
            "h" | "hour" => Duration::from_secs(3600),
            "d" | "day" => Duration::from_secs(86_400),
            _ => crate::units::parse_duration(per)?,
        };
        let rate = GroupRate {
            limit,
            period,
            burst,
        };
        rate.check()?;
        Ok(rate)
    }
}

/// A rate's state as a claim reads it: the interval between tokens, the burst's
/// tolerance, and the theoretical arrival time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    /// Microseconds per token: the period over the limit (at least 1).
    pub every: Micros,
    /// How far `tat` may run ahead of now with a token still left: `(burst - 1) * every`.
    pub tolerance: Micros,
    pub tat: Micros,
}

impl Bucket {
    /// The bucket of stored columns: limit, period (microseconds), burst, tat.
    pub fn new(limit: i64, period: Micros, burst: i64, tat: Micros) -> Self {
        let every = (period / limit.max(1)).max(1);
        Bucket {
            every,
            tolerance: (burst.max(1) - 1).saturating_mul(every),
            tat,
        }
    }

    /// The bucket of a group's stored columns, if it has a rate.
    pub fn stored(
        limit: Option<i64>,
        period: Option<i64>,
        burst: Option<i64>,
        tat: Micros,
    ) -> Option<Self> {
        Some(Bucket::new(limit?, period?, burst?, tat))
    }

    /// Tokens left at `now`: how many tasks a claim may take now.
    pub fn tokens(&self, now: Micros) -> i64 {
        let ahead = self.tat.max(now) - now;
        if ahead > self.tolerance {
            return 0;
        }
        (self.tolerance - ahead) / self.every + 1
    }

    /// When the next token comes back: now or earlier when one is left.
    pub fn next_token(&self) -> Micros {
        self.tat - self.tolerance
    }

    /// The `tat` after a claim of `n` tasks at `now`.
    pub fn take(&self, now: Micros, n: i64) -> Micros {
        self.tat.max(now) + n * self.every
    }
}

/// The room a claim sees in a group: the tasks its limit leaves room for, and its tokens.
pub(crate) fn room(counter: i64, bucket: Option<Bucket>, now: Micros) -> GroupRoom {
    match bucket {
        Some(bucket) => GroupRoom {
            slots: counter,
            tokens: bucket.tokens(now),
        },
        None => GroupRoom::slots(counter),
    }
}

/// Refuses a task's cost out of bounds, naming the field.
pub fn check_cost(cost: u32) -> Result<(), String> {
    if (1..=MAX_COST).contains(&cost) {
        Ok(())
    } else {
        Err(format!(
            "`cost` is {cost}: a task spends 1 to {MAX_COST} tokens of its group's rate"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Micros = 1_000_000;

    #[test]
    fn a_bucket_gives_its_burst_then_one_token_per_interval() {
        let rate = GroupRate::parse("5/s", 3).unwrap();
        let mut bucket = rate.bucket(0);
        assert_eq!(bucket.every, S / 5);
        let now = 10 * S;
        assert_eq!(bucket.tokens(now), 3);
        bucket.tat = bucket.take(now, 3);
        assert_eq!(bucket.tokens(now), 0);
        assert_eq!(bucket.next_token(), now + S / 5);
        assert_eq!(bucket.tokens(now + S / 5 - 1), 0);
        assert_eq!(bucket.tokens(now + S / 5), 1);
        // A long quiet spell gives back the burst, never more.
        assert_eq!(bucket.tokens(now + 100 * S), 3);
    }

    #[test]
    fn over_any_span_a_bucket_lets_through_its_rate_and_burst() {
        let rate = GroupRate::parse("5/s", 1).unwrap();
        let mut bucket = rate.bucket(0);
        let mut taken = Vec::new();
        // Asked every millisecond for 10 s.
        for now in (0..10 * S).step_by(1000) {
            let n = bucket.tokens(now);
            if n > 0 {
                bucket.tat = bucket.take(now, n);
                taken.extend(std::iter::repeat_n(now, n as usize));
            }
        }
        assert_eq!(taken.len(), 50);
    }

    #[test]
    fn a_task_dearer_than_the_burst_overdraws_and_the_next_waits_out_the_debt() {
        let rate = GroupRate::parse("5/s", 2).unwrap();
        let mut bucket = rate.bucket(0);
        let now = 10 * S;
        assert_eq!(bucket.tokens(now), 2);
        // Ten tokens' worth: two seconds of the rate.
        bucket.tat = bucket.take(now, 10);
        assert_eq!(bucket.tokens(now), 0);
        // The debt is paid once `tat` is within the burst's tolerance of now again.
        assert_eq!(bucket.next_token(), now + 9 * S / 5);
        assert_eq!(bucket.tokens(now + 9 * S / 5 - 1), 0);
        assert_eq!(bucket.tokens(now + 9 * S / 5), 1);
        assert!(check_cost(0).unwrap_err().contains("`cost`"));
        assert!(check_cost(MAX_COST + 1).is_err());
        assert!(check_cost(MAX_COST).is_ok());
    }

    #[test]
    fn rates_are_read_as_people_write_them_and_bad_ones_named() {
        let rate = GroupRate::parse("1000/h", 1).unwrap();
        assert_eq!(rate.period, Duration::from_secs(3600));
        assert_eq!(rate.limit, 1000);
        assert_eq!(
            GroupRate::parse("10/30s", 2).unwrap().period,
            Duration::from_secs(30)
        );
        assert!(GroupRate::parse("fast", 1).unwrap_err().contains("5/s"));
        assert!(
            GroupRate::parse("0/s", 1)
                .unwrap_err()
                .contains("rate.limit")
        );
        assert!(
            GroupRate::parse("5/s", 0)
                .unwrap_err()
                .contains("rate.burst")
        );
        assert!(
            GroupRate::parse("5/0s", 1)
                .unwrap_err()
                .contains("rate.period")
        );
    }
}
