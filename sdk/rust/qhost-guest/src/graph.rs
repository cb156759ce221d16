//! What a task reads of the tasks it runs after (`after` in its submission, or the
//! children it suspended for): how each ended, and its output.

pub use crate::bindings::qhost::task::graph::{Dependency, Ended};

use crate::bindings::qhost::task::graph as raw;

/// The tasks this task runs after, in the order of their ids, each with how it ended and
/// its output; none for a task that runs after none. The error says why they could not
/// be read (their outputs come to more than 16 MiB, or the store is unreachable).
pub fn inputs() -> Result<Vec<Dependency>, String> {
    raw::inputs()
}

impl Dependency {
    /// Its output when it succeeded; else an error naming it and how it ended.
    pub fn output(&self) -> Result<&[u8], String> {
        match self.ended {
            Ended::Succeeded => Ok(&self.output),
            ended => Err(format!(
                "{} ended {}{}",
                self.name,
                match ended {
                    Ended::Failed => "failed",
                    Ended::Cancelled => "cancelled",
                    _ => "skipped",
                },
                self.error
                    .as_deref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            )),
        }
    }

    /// Its output read as JSON of type `T`, when it succeeded.
    #[cfg(feature = "json")]
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
        serde_json::from_slice(self.output()?)
            .map_err(|e| format!("the output of {} is not the JSON expected: {e}", self.name))
    }
}
