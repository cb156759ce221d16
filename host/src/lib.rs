//! qhost: a durable task runner that runs every task as a sandboxed WebAssembly component.
//!
//! A map of the crate:
//! - [`runtime`]: the wasmtime engine, the fixed pool of instance slots, the sandbox and
//!   the limits that every task attempt runs under.
//! - [`store`]: the durable store: the driver trait, and its SQLite and PostgreSQL drivers.
//! - [`scheduler`]: batches, tasks and their rules; the node that claims and runs tasks.
//! - [`api`]: the HTTP JSON API that `qhost serve` offers.
//! - [`schedules`]: batches opened from a plan on a cron schedule.
//! - [`cli`]: the `qhost` command line, one file per subcommand.
//! - [`units`]: sizes and durations as people write them; [`whole`]: integer fields of
//!   requests that take `3.0` as JSON Schema's `integer` does.
//! - [`secrets`]: the key that seals secret settings at rest.
//! - [`webhooks`]: batches' ends and tasks' final failures posted, signed, to a URL.
//! - [`private_file`]: files only their owner may read.
//! - [`telemetry`]: the log and, when an OTLP endpoint is set, traces.

pub mod api;
pub mod cli;
pub mod private_file;
pub mod runtime;
pub mod scheduler;
pub mod schedules;
pub mod secrets;
pub mod store;
pub mod telemetry;
pub mod units;
pub mod webhooks;
pub mod whole;
