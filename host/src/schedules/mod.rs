//! Schedules' timing: when a schedule's ticks fall (cron in a named time zone) and which
//! of those that came due fire, as the `catch_up` policy says ([`timing`]). The node's
//! ticker that handles them is `crate::scheduler::node::ticker`.

pub mod timing;

#[cfg(test)]
mod tests;
