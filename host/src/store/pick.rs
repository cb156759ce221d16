//! First-fit picking of claim candidates under group, batch and tenant limits, shared by
//! the drivers: candidates come in claim order, and each is taken if its group, its batch
//! and its batch's tenant still have room, so a full group, batch or tenant passes its
//! tasks over without holding up the rest (no head-of-line blocking). A group with a rate
//! takes a task while it has a token left, and the task spends its cost in tokens
//! ([`super::rate`]).

use std::collections::HashMap;

use super::{BatchId, TaskId, TenantId};

/// A place in claim order: priority, vseq, id.
pub(crate) type Place = (i32, i64, TaskId);

/// Whether `a` comes before `b` in claim order (priority descending, then vseq, then id).
pub(crate) fn before(a: Place, b: Place) -> bool {
    (-a.0, a.1, a.2) < (-b.0, b.1, b.2)
}

/// A ready task that a claim may take.
#[derive(Clone)]
pub(crate) struct Candidate {
    pub id: TaskId,
    pub batch: BatchId,
    pub group: Option<String>,
    /// The batch has a `max_parallel`: it needs room in its batch to be taken.
    pub limited: bool,
    /// Its batch's tenant: it needs room in the tenant to be taken.
    pub tenant: Option<TenantId>,
    pub vseq: i64,
    /// Tokens it spends of its group's rate.
    pub cost: i64,
}

/// Room left in a group: tasks it may still start, and its rate's tokens (a group
/// without a rate: as many as there can be).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GroupRoom {
    pub slots: i64,
    pub tokens: i64,
}

impl GroupRoom {
    /// No room: a full or held group.
    pub const NONE: GroupRoom = GroupRoom {
        slots: 0,
        tokens: 0,
    };

    /// Room for `slots` tasks in a group without a rate.
    pub fn slots(slots: i64) -> GroupRoom {
        GroupRoom {
            slots,
            tokens: i64::MAX,
        }
    }

    /// Whether it takes one more task.
    pub fn open(&self) -> bool {
        self.slots > 0 && self.tokens > 0
    }

    /// The most tasks it may take: each needs a slot and at least one token.
    pub fn most(&self) -> i64 {
        self.slots.min(self.tokens).max(0)
    }
}

/// Room left in groups and batches.
#[derive(Clone, Default)]
pub(crate) struct Rooms {
    /// Room per batch (`None`: no limit). A limited batch that is missing has no room.
    pub batches: HashMap<BatchId, Option<i64>>,
    /// Room per group; a group that is missing has no room.
    pub groups: HashMap<String, GroupRoom>,
    /// Room per tenant (`None`: no limit); a tenant that is missing has no room.
    pub tenants: HashMap<TenantId, Option<i64>>,
}

impl Rooms {
    /// Whether `c` fits; if so, its room is taken.
    pub fn take(&mut self, c: &Candidate) -> bool {
        if c.limited {
            match self.batches.get(&c.batch) {
                None => return false,
                Some(room) if room.is_some_and(|room| room <= 0) => return false,
                Some(_) => {}
            }
        }
        if let Some(tenant) = c.tenant {
            match self.tenants.get(&tenant) {
                None => return false,
                Some(room) if room.is_some_and(|room| room <= 0) => return false,
                Some(_) => {}
            }
        }
        if let Some(group) = &c.group {
            match self.groups.get_mut(group) {
                Some(room) if room.open() => {
                    room.slots -= 1;
                    room.tokens = room.tokens.saturating_sub(c.cost);
                }
                _ => return false,
            }
        }
        if let Some(Some(room)) = self.batches.get_mut(&c.batch) {
            *room -= 1;
        }
        if let Some(Some(room)) = c.tenant.and_then(|t| self.tenants.get_mut(&t)) {
            *room -= 1;
        }
        true
    }

    /// How many of `candidates` a first-fit pick of at most `max` would take, and the room
    /// it would leave; these rooms stay as they are. A claim that would come out short
    /// looks for more candidates where that room is.
    pub fn trial<'a>(
        &self,
        candidates: impl IntoIterator<Item = &'a Candidate>,
        max: usize,
    ) -> (usize, Rooms) {
        let mut rooms = self.clone();
        let fits = candidates
            .into_iter()
            .filter(|c| rooms.take(c))
            .take(max)
            .count();
        (fits, rooms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(id: TaskId, batch: BatchId, group: Option<&str>, limited: bool) -> Candidate {
        Candidate {
            id,
            batch,
            group: group.map(str::to_owned),
            limited,
            tenant: None,
            vseq: 0,
            cost: 1,
        }
    }

    #[test]
    fn a_full_group_or_batch_is_passed_over_and_the_rest_is_taken() {
        let mut rooms = Rooms::default();
        rooms.groups.insert("g".into(), GroupRoom::slots(1));
        rooms.batches.insert(1, Some(2));
        rooms.batches.insert(2, None);
        let candidates = [
            candidate(1, 1, Some("g"), true),
            candidate(2, 1, Some("g"), true),
            candidate(3, 1, None, true),
            candidate(4, 1, None, true),
            candidate(5, 2, None, false),
            candidate(6, 3, None, true),
        ];
        let taken: Vec<TaskId> = candidates
            .iter()
            .filter(|c| rooms.take(c))
            .map(|c| c.id)
            .collect();
        // 2: its group is full; 4: its batch is full; 6: its batch has no room known.
        assert_eq!(taken, [1, 3, 5]);
    }

    #[test]
    fn a_full_tenant_passes_over_the_tasks_of_all_its_batches() {
        let mut rooms = Rooms::default();
        rooms.batches.insert(1, None);
        rooms.batches.insert(2, None);
        rooms.batches.insert(3, None);
        rooms.tenants.insert(7, Some(2));
        rooms.tenants.insert(8, None);
        let of = |id, batch, tenant| Candidate {
            tenant,
            ..candidate(id, batch, None, false)
        };
        let candidates = [
            of(1, 1, Some(7)),
            of(2, 2, Some(7)),
            of(3, 1, Some(7)),
            of(4, 3, None),
            of(5, 3, Some(8)),
            of(6, 3, Some(9)),
        ];
        let taken: Vec<TaskId> = candidates
            .iter()
            .filter(|c| rooms.take(c))
            .map(|c| c.id)
            .collect();
        // 3: tenant 7 has two running, across its batches; 6: its tenant has no room known.
        assert_eq!(taken, [1, 2, 4, 5]);
        assert_eq!(rooms.tenants[&7], Some(0));
    }

    #[test]
    fn a_rated_group_takes_tasks_while_it_has_a_token_and_each_spends_its_cost() {
        let mut rooms = Rooms::default();
        rooms.groups.insert(
            "g".into(),
            GroupRoom {
                slots: 10,
                tokens: 4,
            },
        );
        rooms.batches.insert(1, None);
        let costing = |id, cost| Candidate {
            cost,
            ..candidate(id, 1, Some("g"), false)
        };
        let candidates = [costing(1, 3), costing(2, 5), costing(3, 1), costing(4, 1)];
        let taken: Vec<TaskId> = candidates
            .iter()
            .filter(|c| rooms.take(c))
            .map(|c| c.id)
            .collect();
        // 1 leaves one token, which 2 spends and overdraws; 3 and 4 find none left.
        assert_eq!(taken, [1, 2]);
        assert_eq!(rooms.groups["g"].tokens, -4);
        assert_eq!(rooms.groups["g"].slots, 8);
    }
}
