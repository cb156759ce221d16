//! The weighted fair share between tenants on the [`Model`] (see [`crate::store::fair`]):
//! a claim runs in rounds, each giving the slots left to the tenants with a task due at
//! its gate (not held, with room) by their standing, taking at most that many of each
//! tenant's tasks in claim order, and dropping the tenants that could not use all they
//! were given. Every attempt that ran counts the slot time it held from its claim to its
//! end; a tenant that held nothing starts no lower than the fair clock.

use super::*;
use crate::store::fair::{self, Lane};

/// What the share keeps of a tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    pub weight: i64,
    /// Slot time held, raised to the clock when it started again after holding nothing.
    pub used: i64,
    /// Slot time held, and attempts that ran, since it was added.
    pub slot_micros: i64,
    pub ended: i64,
}

impl Default for Share {
    fn default() -> Self {
        Share {
            weight: i64::from(fair::MIN_WEIGHT),
            used: 0,
            slot_micros: 0,
            ended: 0,
        }
    }
}

impl Model {
    /// Gives `tenant` a weight; its pass stays (`fair_used / weight`).
    pub fn set_tenant_weight(&mut self, tenant: TenantId, weight: u32) {
        let share = self.shares.entry(tenant).or_default();
        share.used = share.used * i64::from(weight) / share.weight;
        share.weight = i64::from(weight);
    }

    /// `tenant`'s tasks claimed now.
    pub(super) fn tenant_claimed(&self, tenant: TenantId) -> i64 {
        self.tasks
            .iter()
            .filter(|t| t.phase == Phase::Claimed && self.batches[&t.batch].tenant == Some(tenant))
            .count() as i64
    }

    /// The lanes at `now`: the tenants with a task due at its gate, not held and with room,
    /// but those in `out`.
    fn lanes(&self, now: Micros, out: &BTreeSet<TenantId>) -> Vec<Lane> {
        let gates = gates(&self.tasks);
        let held: BTreeSet<TenantId> = self.held_tenants(now).collect();
        let ready: BTreeSet<TenantId> = self
            .tasks
            .iter()
            .filter(|t| is_due_at_gate(t, &gates, now))
            .filter_map(|t| self.batches[&t.batch].tenant)
            .collect();
        ready
            .into_iter()
            .filter(|t| !held.contains(t) && !out.contains(t))
            .filter_map(|tenant| {
                let running = self.tenant_claimed(tenant);
                let room = self
                    .tenant_limits
                    .get(&tenant)
                    .map(|&limit| i64::from(limit) - running);
                if room.is_some_and(|room| room <= 0) {
                    return None;
                }
                let share = self.shares.get(&tenant).copied().unwrap_or_default();
                Some(Lane {
                    tenant,
                    weight: share.weight,
                    used: share.used,
                    running,
                    slot_micros: share.slot_micros,
                    ended: share.ended,
                    room,
                })
            })
            .collect()
    }

    /// The tasks a claim of `k` at `now` takes, in the order it takes them, round after
    /// round (each a [`Model::claim_round`]).
    pub(super) fn claim_shared(&mut self, now: Micros, k: usize) -> Vec<TaskId> {
        let mut out = BTreeSet::new();
        let mut lanes = self.lanes(now, &out);
        if lanes.is_empty() || k == 0 {
            return self.claim_round(now, k, None);
        }
        let mut taken_all = Vec::new();
        loop {
            let clock = self.fair_clock;
            let caps = fair::allot(&lanes, clock, k - taken_all.len());
            let got = self.claim_round(now, k - taken_all.len(), Some(&caps));
            let taken = fair::taken(got.iter().map(|&id| {
                let batch = self.task(id).expect("a claimed task exists").batch;
                self.batches[&batch].tenant
            }));
            // A tenant that held nothing and took some starts at the clock.
            for lane in lanes.iter().filter(|l| taken.contains_key(&l.tenant)) {
                self.shares.entry(lane.tenant).or_default().used = lane.lifted(clock);
            }
            self.fair_clock = fair::served(&lanes, clock, &taken);
            taken_all.extend(got);
            if taken_all.len() == k {
                break;
            }
            let short = fair::short(&caps, &taken);
            if short.is_empty() {
                break;
            }
            out.extend(short);
            lanes = self.lanes(now, &out);
            if lanes.is_empty() {
                break;
            }
        }
        taken_all
    }

    /// Counts an attempt of `batch`'s that ran from `claimed_at` to `now` in its tenant's
    /// share.
    pub(super) fn charge_slot(&mut self, batch: BatchId, claimed_at: Micros, now: Micros) {
        let Some(tenant) = self.batches[&batch].tenant else {
            return;
        };
        let held = (now - claimed_at).max(0);
        let share = self.shares.entry(tenant).or_default();
        share.used += held;
        share.slot_micros += held;
        share.ended += 1;
    }
}
