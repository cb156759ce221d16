//! Schedules: batches opened from a plan at the ticks of a cron expression.
//!
//! - [`timing`]: when ticks fall (cron in a named time zone) and which of those that came
//!   due fire, as the `catch_up` policy says.
//! - [`ticker`]: a node's loop that hands due ticks to the store, which opens each tick's
//!   batch once across every node.

pub mod ticker;
pub mod timing;

#[cfg(test)]
mod tests;
