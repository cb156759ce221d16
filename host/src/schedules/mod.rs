//! Schedules: batches opened from a plan at the ticks of a cron expression.
//!
//! - [`timing`]: when ticks fall (cron in a named time zone) and which of those that came
//!   due fire, as the `catch_up` policy says.

pub mod timing;

#[cfg(test)]
mod tests;
