//! Back-pressure from upstream: a task told to come back later (an HTTP 429 or 503 with
//! `Retry-After`, say) asks qhost to run it again then, without using an attempt.

use std::time::Duration;

use crate::bindings::qhost::task::host;

/// Ends this attempt as `deferred` once the task returns, whatever it returns, and runs
/// the task again after `wait` (whole seconds, rounded up) without using one of its
/// attempts; its group starts no task meanwhile. The operator caps the wait (1 hour by
/// default) and how often one task may be deferred (20 times by default); past that the
/// attempt counts as a failure.
pub fn retry_after(wait: Duration) {
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    host::retry_after(u32::try_from(seconds).unwrap_or(u32::MAX));
}
