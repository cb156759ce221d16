//! The webhook outbox as both stores keep it: the events a batch's end or a task's final
//! failure owes a webhook, written in the transaction that ends the task, and claimed by
//! a node's sender one try at a time ([`crate::scheduler::node`]'s `webhooks`).
//!
//! An event is written only when someone listens: the batch was opened with a `webhook`,
//! or the server has one (`--webhook`). A store knows the server's from
//! [`super::Store::webhook_server`]; a batch's own is read from a row the completion
//! updates or reads anyway, so a store with no webhook runs no statement more.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{BatchId, Micros, TaskId};

/// At most this many events of one batch wait in the outbox: past it, a task's failure
/// is not written (the batch's end always is), so a batch of many failing tasks aimed at
/// an unreachable hook cannot fill the store.
pub const MAX_PENDING_PER_BATCH: i64 = 100;

/// The longest error a `task.failed` event keeps, in bytes.
pub const MAX_EVENT_ERROR: usize = 4096;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookKind {
    /// Every task of the batch has ended.
    BatchEnded,
    /// A task failed for good: no attempt left (or its last attempt was lost).
    TaskFailed,
}

impl HookKind {
    pub fn as_str(self) -> &'static str {
        match self {
            HookKind::BatchEnded => "batch.ended",
            HookKind::TaskFailed => "task.failed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "batch.ended" => Some(HookKind::BatchEnded),
            "task.failed" => Some(HookKind::TaskFailed),
            _ => None,
        }
    }
}

/// A batch's own webhook, as the store keeps it: its URL, and its secret sealed under the
/// server's secret key ([`crate::secrets::SecretKey::seal`], name [`SECRET_NAME`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchHook {
    pub url: String,
    pub sealed_secret: String,
}

/// The name a webhook's secret is sealed under.
pub const SECRET_NAME: &str = "webhook";

/// A batch's webhook as views show it: never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WebhookView {
    /// Where the batch's end and its tasks' final failures are posted.
    pub url: String,
}

/// One delivery owed: an event for the server's webhook, or for the batch's own.
#[derive(Debug, Clone)]
pub struct HookEvent {
    /// The event's id, never given again: receivers tell repeats apart by it.
    pub id: i64,
    pub batch: BatchId,
    pub task: Option<TaskId>,
    pub kind: HookKind,
    /// The batch's own webhook; none: the server's.
    pub hook: Option<BatchHook>,
    /// A failed task's outcome and error (cut to [`MAX_EVENT_ERROR`]).
    pub outcome: Option<String>,
    pub error: Option<String>,
    pub created_at: Micros,
    /// Tries made, this one included.
    pub tries: u32,
    /// The body sent at the first try, kept so that every try sends the same bytes.
    pub body: Option<Vec<u8>>,
}

/// What a sender claimed, and when the next event not claimed falls due.
#[derive(Debug, Clone, Default)]
pub struct HookClaim {
    pub events: Vec<HookEvent>,
    pub next_due: Option<Micros>,
}

/// An error cut to what an event keeps.
pub(crate) fn event_error(error: Option<&str>) -> Option<String> {
    error.map(|e| crate::runtime::outcome::cut_text(e.replace('\0', "\u{FFFD}"), MAX_EVENT_ERROR))
}
