//! Weighted fair share between tenants: how a claim divides its slots among the tenants
//! with work ready, so that under saturation each gets slot time in proportion to the
//! weight the admin gave it, whatever the number and size of its batches.
//!
//! Each tenant is a lane. Its pass is the slot time its attempts held per unit of weight
//! (`fair_used / weight`); its standing counts as well each of its tasks claimed now at
//! its attempts' mean slot time. A claim gives its slots one at a time to the lane of the
//! lowest standing ([`allot`]), and takes at most that many of each lane's tasks, in claim
//! order: priority orders work within a tenant, not across tenants. A lane that cannot use
//! what it was given (its tasks wait on full groups or batches) leaves it to the others in
//! another round. Batches without a tenant (the admin's) are outside the share.
//!
//! Time without work banks no share: a lane with nothing claimed starts no lower than the
//! fair clock, the highest standing a claim has served ([`served`]). The stores keep
//! `fair_used` and the clock; their completion statements add each attempt's slot time
//! (keep them with [`Lane`]'s arithmetic).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use super::{StoreError, TenantId};

/// The lightest weight a tenant may have, and the default one.
pub const MIN_WEIGHT: u32 = 1;
/// The heaviest weight a tenant may have.
pub const MAX_WEIGHT: u32 = 10_000;
/// The slot time counted for each claimed task of a tenant none of whose attempts has
/// ended yet.
pub const DEFAULT_TASK_MICROS: i64 = 100_000;

/// A tenant's weight: [`MIN_WEIGHT`] to [`MAX_WEIGHT`].
pub fn check_weight(weight: u32) -> Result<u32, StoreError> {
    if (MIN_WEIGHT..=MAX_WEIGHT).contains(&weight) {
        return Ok(weight);
    }
    Err(StoreError::Invalid(format!(
        "field `weight` is {weight}: a tenant's weight is {MIN_WEIGHT} to {MAX_WEIGHT} (its \
         share of the slots under saturation, against the other tenants' weights)"
    )))
}

/// A tenant with ready work, as a claim reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lane {
    pub tenant: TenantId,
    pub weight: i64,
    /// Slot time its attempts held, in microseconds, raised whenever it was lifted to the
    /// fair clock.
    pub used: i64,
    /// Its tasks claimed now.
    pub running: i64,
    /// The slot time its attempts held and how many ended, since it was added: their mean
    /// is what a claimed task counts for.
    pub slot_micros: i64,
    pub ended: i64,
    /// How many more of its tasks may be claimed now; none: no limit.
    pub room: Option<i64>,
}

impl Lane {
    /// The slot time each of its claimed tasks counts for.
    fn task_micros(&self) -> i64 {
        match self.ended {
            0 => DEFAULT_TASK_MICROS,
            ended => (self.slot_micros / ended).max(1),
        }
    }

    /// Its `used`, lifted to `clock` when nothing of its is claimed: what the claim that
    /// takes its tasks stores.
    pub fn lifted(&self, clock: i64) -> i64 {
        if self.running == 0 {
            self.used.max(clock.saturating_mul(self.weight))
        } else {
            self.used
        }
    }

    /// Its standing with `k` more of its tasks claimed: the lowest is served first.
    fn standing(&self, clock: i64, k: i64) -> i64 {
        let claimed = i128::from(self.running + k) * i128::from(self.task_micros());
        let weight = i128::from(self.weight);
        let standing = i128::from(self.lifted(clock)) / weight + claimed / weight;
        standing.min(i128::from(i64::MAX)) as i64
    }
}

/// How many of `slots` each lane gets: one slot at a time to the lane of the lowest
/// standing (ties: the lower tenant id), none past its room. Lanes left out get none.
pub fn allot(lanes: &[Lane], clock: i64, slots: usize) -> BTreeMap<TenantId, i64> {
    let mut given: BTreeMap<TenantId, i64> = lanes.iter().map(|l| (l.tenant, 0)).collect();
    let mut queue: BinaryHeap<Reverse<(i64, TenantId, usize)>> = lanes
        .iter()
        .enumerate()
        .filter(|(_, l)| l.room.is_none_or(|room| room > 0))
        .map(|(at, l)| Reverse((l.standing(clock, 0), l.tenant, at)))
        .collect();
    for _ in 0..slots {
        let Some(Reverse((_, tenant, at))) = queue.pop() else {
            break;
        };
        let k = given.get_mut(&tenant).expect("every lane is counted");
        *k += 1;
        let lane = &lanes[at];
        if lane.room.is_none_or(|room| *k < room) {
            queue.push(Reverse((lane.standing(clock, *k), tenant, at)));
        }
    }
    given
}

/// How many tasks of each tenant a round took, from the tenants of the tasks it took.
pub fn taken(tenants: impl IntoIterator<Item = Option<TenantId>>) -> BTreeMap<TenantId, i64> {
    let mut taken: BTreeMap<TenantId, i64> = BTreeMap::new();
    for tenant in tenants.into_iter().flatten() {
        *taken.entry(tenant).or_default() += 1;
    }
    taken
}

/// The lanes that took less than they were given: nothing more of theirs is claimable in
/// this claim, and the next round gives their slots to the others.
pub fn short(caps: &BTreeMap<TenantId, i64>, taken: &BTreeMap<TenantId, i64>) -> Vec<TenantId> {
    caps.iter()
        .filter(|&(tenant, cap)| taken.get(tenant).copied().unwrap_or(0) < *cap)
        .map(|(&tenant, _)| tenant)
        .collect()
}

/// The fair clock once a claim took `taken` of each lane's tasks: the highest standing
/// it served, never lower than it was.
pub fn served(lanes: &[Lane], clock: i64, taken: &BTreeMap<TenantId, i64>) -> i64 {
    lanes
        .iter()
        .filter_map(|l| {
            let k = *taken.get(&l.tenant)?;
            (k > 0).then(|| l.standing(clock, k - 1))
        })
        .fold(clock, i64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(tenant: TenantId, weight: i64) -> Lane {
        Lane {
            tenant,
            weight,
            used: 0,
            running: 0,
            slot_micros: 0,
            ended: 0,
            room: None,
        }
    }

    #[test]
    fn slots_go_in_proportion_to_weights() {
        let lanes = [lane(1, 1), lane(2, 2), lane(3, 5)];
        let given = allot(&lanes, 0, 8);
        assert_eq!(given, BTreeMap::from([(1, 1), (2, 2), (3, 5)]));
        let given = allot(&lanes, 0, 80);
        assert_eq!(given, BTreeMap::from([(1, 10), (2, 20), (3, 50)]));
    }

    #[test]
    fn the_lane_behind_catches_up_first() {
        let mut ahead = lane(1, 1);
        ahead.used = 10 * DEFAULT_TASK_MICROS;
        ahead.running = 1;
        let given = allot(&[ahead, lane(2, 1)], 0, 4);
        assert_eq!(given, BTreeMap::from([(1, 0), (2, 4)]));
    }

    #[test]
    fn a_lane_never_gets_past_its_room() {
        let mut small = lane(1, 5);
        small.room = Some(1);
        let mut full = lane(3, 5);
        full.room = Some(0);
        let given = allot(&[small, lane(2, 1), full], 0, 4);
        assert_eq!(given, BTreeMap::from([(1, 1), (2, 3), (3, 0)]));
    }

    #[test]
    fn an_idle_lane_starts_at_the_clock_and_banks_nothing() {
        let idle = lane(1, 1);
        assert_eq!(idle.lifted(7), 7);
        let mut busy = lane(2, 1);
        busy.used = 7;
        busy.running = 1;
        busy.ended = 1;
        busy.slot_micros = 1;
        assert_eq!(busy.lifted(100), 7);
        // The clock moves to what it served, never back.
        let lanes = [idle];
        assert_eq!(served(&lanes, 7, &BTreeMap::from([(1, 2)])), 7 + 100_000);
        assert_eq!(served(&lanes, 7, &BTreeMap::from([(1, 0)])), 7);
    }

    #[test]
    fn a_weight_out_of_range_is_refused_naming_the_field() {
        assert!(check_weight(1).is_ok() && check_weight(MAX_WEIGHT).is_ok());
        for bad in [0, MAX_WEIGHT + 1] {
            let err = check_weight(bad).unwrap_err().to_string();
            assert!(err.contains("field `weight`"), "{err}");
        }
    }
}
