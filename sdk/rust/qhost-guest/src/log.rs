//! Log lines: kept with the attempt, with their level and the time since the attempt
//! started (`qhost task logs`, `qhost run` prints them on stderr). Prefer them to
//! printing, which is kept too but as raw bytes.

use crate::bindings::qhost::task::host;
pub use crate::bindings::qhost::task::types::Level;

/// Appends a line at `level` to the attempt's log. Each line costs 64 bytes of the
/// attempt's log limit (64 KiB by default) besides its text; lines past it are dropped
/// and counted.
pub fn log(level: Level, message: &str) {
    host::log(level, message);
}

/// Logs at a level with `format!` arguments: `qhost_guest::info!("{} rows", n)`.
#[macro_export]
macro_rules! trace {
    ($($arg:tt)*) => { $crate::log($crate::Level::Trace, &::std::format!($($arg)*)) };
}

/// Logs at a level with `format!` arguments: `qhost_guest::info!("{} rows", n)`.
#[macro_export]
macro_rules! debug {
    ($($arg:tt)*) => { $crate::log($crate::Level::Debug, &::std::format!($($arg)*)) };
}

/// Logs at a level with `format!` arguments: `qhost_guest::info!("{} rows", n)`.
#[macro_export]
macro_rules! info {
    ($($arg:tt)*) => { $crate::log($crate::Level::Info, &::std::format!($($arg)*)) };
}

/// Logs at a level with `format!` arguments: `qhost_guest::info!("{} rows", n)`.
#[macro_export]
macro_rules! warn {
    ($($arg:tt)*) => { $crate::log($crate::Level::Warn, &::std::format!($($arg)*)) };
}

/// Logs at a level with `format!` arguments: `qhost_guest::info!("{} rows", n)`.
#[macro_export]
macro_rules! error {
    ($($arg:tt)*) => { $crate::log($crate::Level::Error, &::std::format!($($arg)*)) };
}
