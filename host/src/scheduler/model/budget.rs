//! Budgets on the [`Model`] (see [`crate::store::budget`]): each attempt of a tenant's
//! batch counts what it used (CPU, memory-time, HTTP bytes) in its tenant's window when it
//! ends; once the window's use of any meter reaches its budget, the tenant is held to the
//! window's end and a claim takes none of its tasks, as if its running limit were 0. A
//! task claimed meanwhile gets what its tenant has left.

use super::*;
use crate::store::{Budget, Left, Spent, Window};

impl Model {
    /// Sets or lifts `tenant`'s budget at `now`: it stays held only if what it used in the
    /// window reaches the new budget.
    pub fn set_tenant_budget(&mut self, tenant: TenantId, budget: Option<Budget>, now: Micros) {
        let w = self.budgets.entry(tenant).or_insert(Window::NONE);
        w.budget = budget;
        // Spent means spent in the window that holds `now`, which ends at `end`.
        let hold = match w.end(now) {
            Some(end) if w.spent(now) => end,
            _ => 0,
        };
        self.tenant_holds.insert(tenant, hold);
    }

    /// Counts what an attempt of `batch`'s that ended at `now` used in its tenant's
    /// window, and holds the tenant once the window's use reaches its budget.
    pub(super) fn charge_budget(&mut self, batch: BatchId, used: Spent, now: Micros) {
        let Some(tenant) = self.batches[&batch].tenant else {
            return;
        };
        let Some(w) = self.budgets.get_mut(&tenant) else {
            return;
        };
        w.charge(used, now);
        if w.spent(now)
            && let Some(end) = w.end(now)
        {
            let hold = self.tenant_holds.entry(tenant).or_default();
            *hold = (*hold).max(end);
        }
    }

    /// The tenants held at `now`.
    pub(super) fn held_tenants(&self, now: Micros) -> impl Iterator<Item = TenantId> + '_ {
        self.tenant_holds
            .iter()
            .filter(move |&(_, &until)| until > now)
            .map(|(&tenant, _)| tenant)
    }

    /// What `batch`'s tenant has left of its budget at `now`.
    pub(super) fn budget_left(&self, batch: BatchId, now: Micros) -> Left {
        self.batches[&batch]
            .tenant
            .and_then(|tenant| self.budgets.get(&tenant))
            .map(|w| w.left(now))
            .unwrap_or_default()
    }

    /// When the first held tenant is let go, if one is after `now` (whether it has work
    /// or not, as the stores read it).
    pub(super) fn next_tenant_release(&self, now: Micros) -> Option<Micros> {
        self.tenant_holds
            .values()
            .copied()
            .filter(|&until| until > now)
            .min()
    }
}
