//! CPU budgets on the [`Model`] (see [`crate::store::budget`]): each attempt of a
//! tenant's batch counts the CPU it used in its tenant's window when it ends; once the
//! window's use reaches the budget, the tenant is held to the window's end and a claim
//! takes none of its tasks, as if its running limit were 0. A task claimed meanwhile gets
//! the CPU its tenant has left.

use super::*;
use crate::store::{CpuBudget, Window, budget};

impl Model {
    /// Sets or lifts `tenant`'s budget at `now`: it stays held only if what it used in the
    /// window reaches the new budget.
    pub fn set_tenant_budget(&mut self, tenant: TenantId, cpu: Option<CpuBudget>, now: Micros) {
        let w = self.budgets.entry(tenant).or_insert(Window {
            budget: None,
            start: 0,
            used: 0,
        });
        w.budget = cpu;
        let hold = match cpu {
            Some(b) if w.left(now) == Some(0) => w.start + crate::store::duration_micros(b.period),
            _ => 0,
        };
        self.tenant_holds.insert(tenant, hold);
    }

    /// Counts `cpu` used by an attempt of `batch`'s that ended at `now` in its tenant's
    /// window, and holds the tenant once the window's use reaches its budget.
    pub(super) fn charge_cpu(&mut self, batch: BatchId, cpu: Micros, now: Micros) {
        let Some(tenant) = self.batches[&batch].tenant else {
            return;
        };
        let Some(w) = self.budgets.get_mut(&tenant) else {
            return;
        };
        let Some(b) = w.budget else {
            *w = Window {
                budget: None,
                start: 0,
                used: 0,
            };
            return;
        };
        let period = crate::store::duration_micros(b.period);
        let start = budget::window(period, now);
        w.used = w.used_at(now) + cpu;
        w.start = start;
        if w.left(now) == Some(0) {
            let hold = self.tenant_holds.entry(tenant).or_default();
            *hold = (*hold).max(start + period);
        }
    }

    /// The tenants held at `now`.
    pub(super) fn held_tenants(&self, now: Micros) -> impl Iterator<Item = TenantId> + '_ {
        self.tenant_holds
            .iter()
            .filter(move |&(_, &until)| until > now)
            .map(|(&tenant, _)| tenant)
    }

    /// The CPU `batch`'s tenant has left at `now`; none without a budget.
    pub(super) fn cpu_left(&self, batch: BatchId, now: Micros) -> Option<Micros> {
        let tenant = self.batches[&batch].tenant?;
        self.budgets.get(&tenant)?.left(now)
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
