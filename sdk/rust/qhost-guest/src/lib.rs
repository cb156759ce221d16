//! Write a qhost task in Rust as a plain function.
//!
//! ```ignore
//! use qhost_guest::{TaskInfo, info};
//!
//! #[qhost_guest::task]
//! fn run(input: &[u8], info: &TaskInfo) -> Result<Vec<u8>, String> {
//!     info!("task {} attempt {}: {} bytes", info.id, info.attempt, input.len());
//!     Ok(input.to_ascii_uppercase())
//! }
//! ```
//!
//! The function gets the task's input bytes and who is running ([`TaskInfo`]), and
//! returns its output ([`Output`]: bytes, text or [`Json`]) or an error, any type that
//! shows itself ([`std::fmt::Display`]): an error ends the attempt with outcome
//! `guest-error` and that text, and is retried while attempts are left. A panic traps
//! (outcome `trap`, the panic message in the error).
//!
//! Beyond logging ([`info!`] and its kin) and JSON ([`json`], [`Json`]), a task may read
//! its batch's settings ([`config::setting`]), make HTTP requests its batch was granted
//! ([`http::get`]), read the outputs of the tasks it runs after ([`graph::inputs`]),
//! submit children and wait for them ([`spawn`]), and ask to run again later
//! ([`retry_after`]). A component imports only what its task calls: one that calls none
//! of these runs as a plain `qhost:task/task` component.
//!
//! The crate carries the `qhost:task` WIT package (`wit/`, version 0.1.0, which this
//! crate's version follows) and generates its bindings; a task crate needs no
//! `wit-bindgen` of its own. Build it as a `cdylib` for `wasm32-wasip2`.

// The generated bindings name this crate by its path, as a task crate does.
extern crate self as qhost_guest;

pub mod config;
mod defer;
pub mod graph;
pub mod http;
mod log;
mod output;
pub mod spawn;

#[cfg(feature = "json")]
mod json;

pub use defer::retry_after;
pub use log::{Level, log};
pub use output::Output;
pub use qhost_guest_macros::task;

#[cfg(feature = "json")]
pub use json::{Json, json};

/// Who is running: the task's `id` (a good idempotency key: a retry sees the same one),
/// its `batch`, this `attempt` (from 1), its `order` in the batch and its `group`.
pub use bindings::qhost::task::types::TaskInfo;

/// What the `#[task]` attribute's expansion uses; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::bindings;
    pub use crate::bindings::Guest;
    pub use wit_bindgen;

    /// Turns the task function's result into what the world's `run` returns.
    pub fn finish<O: crate::Output, E: std::fmt::Display>(
        result: Result<O, E>,
    ) -> Result<Vec<u8>, String> {
        match result {
            Ok(output) => output.into_output(),
            // `{:#}`: an error chain (anyhow's, say) shown whole, causes included.
            Err(error) => Err(format!("{error:#}")),
        }
    }
}

#[doc(hidden)]
// Generated code, as wit-bindgen writes it.
#[allow(clippy::too_many_arguments)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        // Every world's imports: a component keeps only those its task calls.
        inline: "
            package qhost:guest-sdk;
            world sdk {
                include qhost:task/task-spawn@0.1.0;
                import wasi:http/outgoing-handler@0.2.12;
                import wasi:config/store@0.2.0-rc.1;
            }
        ",
        world: "qhost:guest-sdk/sdk",
        generate_all,
        pub_export_macro: true,
        export_macro_name: "__export",
        default_bindings_module: "::qhost_guest::__private::bindings",
        runtime_path: "::qhost_guest::__private::wit_bindgen::rt",
    });
}
