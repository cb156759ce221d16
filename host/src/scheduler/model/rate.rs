//! Group rates on the [`Model`], stated as a plain token bucket: a bucket holds at most
//! `burst` tokens and gains one every `period / limit` (whole microseconds, at least
//! one); a claim takes a task while the bucket holds a token, and the task spends its
//! cost, overdrawing the bucket if it holds less. Its state is the time at which the
//! bucket would hold nothing (`empty_at`, the stores' `tat`, later than now while
//! overdrawn): at `now` it holds as many tokens as whole intervals passed since
//! `empty_at - burst * every`, none to `burst`. Setting a rate fills its bucket.

use super::*;
use crate::store::GroupRate;

/// A group's rate and its bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rate {
    pub burst: i64,
    /// Microseconds per token.
    pub every: Micros,
    /// When the bucket is empty (at or before now: it is full).
    pub empty_at: Micros,
}

impl Rate {
    fn of(rate: GroupRate) -> Rate {
        let period = rate.period.as_micros() as Micros;
        Rate {
            burst: i64::from(rate.burst),
            every: (period / i64::from(rate.limit)).max(1),
            empty_at: 0,
        }
    }

    /// Tokens in the bucket at `now`.
    pub fn tokens(&self, now: Micros) -> i64 {
        let since_full = now - (self.empty_at - self.burst * self.every);
        since_full.div_euclid(self.every).clamp(0, self.burst)
    }

    /// When the bucket next holds a token.
    pub fn next_token(&self) -> Micros {
        self.empty_at - (self.burst - 1) * self.every
    }

    /// Takes `n` tokens at `now` (the claim checked one is there; the rest may be owed).
    fn take(&mut self, now: Micros, n: i64) {
        self.empty_at = self.empty_at.max(now) + n * self.every;
    }
}

impl Model {
    /// Sets a group's rate, its bucket full, or removes it; the store then knows the
    /// group (with the default limit if it had none).
    pub fn set_group_rate(&mut self, key: &str, rate: Option<GroupRate>) {
        self.groups
            .entry(key.to_owned())
            .or_insert(DEFAULT_GROUP_LIMIT);
        match rate {
            Some(rate) => {
                self.rates.insert(key.to_owned(), Rate::of(rate));
            }
            None => {
                self.rates.remove(key);
            }
        }
    }

    /// The tokens of each group with a rate at `now`.
    pub(super) fn tokens(&self, now: Micros) -> BTreeMap<String, i64> {
        self.rates
            .iter()
            .map(|(key, rate)| (key.clone(), rate.tokens(now)))
            .collect()
    }

    /// A claim at `now` took `taken`: their groups' buckets give each task's cost.
    pub(super) fn spend_tokens(&mut self, taken: &[TaskId], now: Micros) {
        let mut per_group: BTreeMap<String, i64> = BTreeMap::new();
        for &id in taken {
            if let Some(task) = self.task(id)
                && let Some(group) = task.group.clone()
            {
                *per_group.entry(group).or_default() += task.cost;
            }
        }
        for (group, n) in per_group {
            if let Some(rate) = self.rates.get_mut(&group) {
                rate.take(now, n);
            }
        }
    }

    /// When the first group with a rate, room and a task at its gate that it holds back
    /// (no token now) gets a token again, if one does.
    pub(super) fn next_token(&self, now: Micros) -> Option<Micros> {
        let startable = self.startable_groups();
        self.rates
            .iter()
            .filter(|(key, _)| startable.contains(*key))
            .map(|(_, rate)| rate.next_token())
            .filter(|&at| at > now)
            .min()
    }
}
