//! Deferrals on the [`Model`]: an attempt that ends `deferred` puts its task back at the
//! time it asked without using an attempt (its `deferrals` count on top of its
//! `max_attempts`), and holds its group until then: the claim takes none of the group's
//! tasks before, as if it had no token. Past `most` deferrals the attempt is a failure.

use super::*;

impl Model {
    /// The groups held at `now`, each with no room: merged into the claim's tokens.
    pub(super) fn held(&self, now: Micros) -> impl Iterator<Item = (String, i64)> + '_ {
        self.holds
            .iter()
            .filter(move |&(_, &until)| until > now)
            .map(|(key, _)| (key.clone(), 0))
    }

    /// Holds `group` until `until`, or its later hold.
    pub(super) fn hold(&mut self, group: &str, until: Micros) {
        let hold = self.holds.entry(group.to_owned()).or_default();
        *hold = (*hold).max(until);
    }

    /// When the first held group with room and a task at its gate is let go, if one is
    /// after `now`.
    pub(super) fn next_release(&self, now: Micros) -> Option<Micros> {
        let startable = self.startable_groups();
        self.holds
            .iter()
            .filter(|&(_, &until)| until > now)
            .filter(|(key, _)| startable.contains(*key))
            .map(|(_, &until)| until)
            .min()
    }
}
