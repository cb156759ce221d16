//! A group's hold: after a task of the group was deferred (`retry-after`), the group
//! takes no new task until the time it asked, on any node. Both drivers keep it in the
//! group's `held_until` (microseconds), moved only later by each deferral, and read it in
//! the claim's transaction beside the group's limit and rate.

use super::Micros;
use super::pick::GroupRoom;

/// The room a claim sees in a group held until `held_until`: none before then.
pub(crate) fn room(room: GroupRoom, held_until: Micros, now: Micros) -> GroupRoom {
    if held_until > now {
        GroupRoom::NONE
    } else {
        room
    }
}

/// Whether a group held until `held_until` is held at `now`.
pub fn holds(held_until: Micros, now: Micros) -> bool {
    held_until > now
}
