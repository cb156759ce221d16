//! What becomes of an attempt that did not succeed: another attempt after a backoff, or
//! an end, and in which state and with which words. Both drivers ask here; only the
//! writing is theirs.

use super::{Defer, Micros, TaskState, random_token};
use crate::runtime::Outcome;

/// Why a task that failed with attempts left ends instead of running again: its batch
/// halts on failure and another of its tasks has failed for good. Were it retried, the
/// halt would cancel it or not depending on which completion was written first.
pub(crate) const HALTED: &str = "cancelled: the batch halted on an earlier failure";

/// What the pending tasks of a batch are cancelled with when `task` failed and the batch
/// halts on failure.
pub(crate) fn halt_reason(task: i64) -> String {
    format!("cancelled: task {task} failed and the batch halts on failure")
}

/// The error of an attempt whose lease ran out on `node`; `restarted` when that node
/// itself found it at start.
pub(crate) fn lost_reason(node: &str, restarted: bool) -> String {
    if restarted {
        format!("node {node} restarted while the attempt ran")
    } else {
        format!("node {node} stopped renewing the attempt's lease")
    }
}

/// The most attempts a task makes when host errors give attempts back: a host that fails
/// every start ends the task here, as `host-error`, instead of retrying for ever.
pub(crate) const MAX_ATTEMPTS_WITH_HOST_ERRORS: u32 = 100;

/// The least backoff after a host error, doubled for each attempt: a host that cannot
/// start a task does not retry it in a hot loop, whatever backoff the task asked.
const HOST_ERROR_BACKOFF_MS: i64 = 1000;

/// An attempt that ended without success, as the driver read it.
pub(crate) struct Failed {
    pub outcome: Outcome,
    pub error: Option<String>,
    /// Attempts made, this one included.
    pub attempts: u32,
    pub max_attempts: u32,
    pub backoff_ms: i64,
    pub cancel_requested: bool,
    /// What a `deferred` attempt asked.
    pub defer: Option<Defer>,
    /// How many times the task was deferred before this attempt.
    pub deferrals: u32,
}

/// What a driver writes for a [`Failed`] attempt.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Back to the queue, not before this time, with this attempt's error kept; with
    /// `given_back`, the task gets the attempt back (its `max_attempts` rises by one): the
    /// host failed, not the task.
    Retry {
        not_before: Micros,
        error: Option<String>,
        given_back: bool,
    },
    /// Back to the queue at `until` without using an attempt (the driver raises its
    /// deferrals, which the attempts it may make count on top of `max_attempts`), and its
    /// group held until then.
    Defer {
        until: Micros,
        error: Option<String>,
    },
    /// Ended for good.
    End {
        state: TaskState,
        outcome: Outcome,
        error: Option<String>,
    },
}

impl Failed {
    /// Whether another attempt is allowed, if the batch has not halted: the driver asks
    /// whether it has only then, as that takes a read.
    pub(crate) fn may_retry(&self) -> bool {
        self.deferral().is_some()
            || (self.outcome != Outcome::Cancelled
                && !self.cancel_requested
                && (self.attempts < self.max_attempts || self.gives_back()))
    }

    /// Whether the attempt is given back: the host failed to start it, and the task has
    /// not reached [`MAX_ATTEMPTS_WITH_HOST_ERRORS`].
    fn gives_back(&self) -> bool {
        self.outcome == Outcome::HostError && self.attempts < MAX_ATTEMPTS_WITH_HOST_ERRORS
    }

    /// The deferral a `deferred` attempt asked, if the task may be deferred once more.
    fn deferral(&self) -> Option<Defer> {
        self.defer.filter(|d| {
            self.outcome == Outcome::Deferred && !self.cancel_requested && self.deferrals < d.most
        })
    }

    /// Its fate, given whether its batch has `halted` (asked only if [`Self::may_retry`]).
    pub(crate) fn fate(mut self, halted: bool, now: Micros) -> Fate {
        // A suspension comes here only when its task's cancellation was asked or its batch
        // halted: it waits for nothing more.
        if self.outcome == Outcome::Suspended {
            let error = if self.cancel_requested {
                "cancelled while running"
            } else {
                HALTED
            };
            return Fate::End {
                state: TaskState::Cancelled,
                outcome: Outcome::Cancelled,
                error: Some(error.into()),
            };
        }
        if let Some(defer) = self.deferral()
            && !halted
        {
            return Fate::Defer {
                until: defer.until.max(now),
                error: self.error,
            };
        }
        // Past its bound a deferral counts as a failure, retried like any other.
        if let Some(defer) = self.defer.filter(|_| self.outcome == Outcome::Deferred)
            && self.deferrals >= defer.most
        {
            self.error = Some(format!(
                "deferred {} times already, the most a task may be (`max_deferrals`): this \
                 attempt counts as a failure",
                self.deferrals
            ));
        }
        if self.may_retry() && !halted {
            let given_back = self.gives_back();
            let backoff_ms = if given_back {
                self.backoff_ms.max(HOST_ERROR_BACKOFF_MS)
            } else {
                self.backoff_ms
            };
            return Fate::Retry {
                not_before: now + backoff_micros(backoff_ms, self.attempts),
                error: self.error,
                given_back,
            };
        }
        if self.may_retry() {
            return Fate::End {
                state: TaskState::Cancelled,
                outcome: Outcome::Cancelled,
                error: Some(HALTED.into()),
            };
        }
        if self.outcome == Outcome::Cancelled || self.cancel_requested {
            return Fate::End {
                state: TaskState::Cancelled,
                outcome: Outcome::Cancelled,
                error: self.error.or(Some("cancelled while running".into())),
            };
        }
        Fate::End {
            state: TaskState::Failed,
            outcome: self.outcome,
            error: self.error,
        }
    }
}

/// Exponential backoff with jitter: the n-th retry waits between half and all of
/// `backoff * 2^(n-1)`, capped at an hour.
pub(crate) fn backoff_micros(backoff_ms: i64, attempts: u32) -> Micros {
    let exponent = attempts.saturating_sub(1).min(20);
    let full = (backoff_ms.max(0) * 1000)
        .saturating_mul(1 << exponent)
        .min(3_600_000_000);
    let jitter = (random_token() as u64 % 1000) as i64;
    full / 2 + full / 2 * jitter / 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(outcome: Outcome, attempts: u32) -> Failed {
        Failed {
            outcome,
            error: Some("boom".into()),
            attempts,
            max_attempts: 3,
            backoff_ms: 1000,
            cancel_requested: false,
            defer: None,
            deferrals: 0,
        }
    }

    #[test]
    fn a_deferral_runs_again_at_its_time_until_its_bound_then_counts_as_a_failure() {
        let deferred = |deferrals| Failed {
            defer: Some(Defer {
                until: 5_000_000,
                most: 2,
            }),
            deferrals,
            ..failed(Outcome::Deferred, 3)
        };
        // On its last attempt, and yet not charged.
        assert_eq!(
            deferred(1).fate(false, 1_000),
            Fate::Defer {
                until: 5_000_000,
                error: Some("boom".into())
            }
        );
        let Fate::End { error, .. } = deferred(2).fate(false, 1_000) else {
            panic!("past its bound, the last attempt fails");
        };
        assert!(error.unwrap().contains("`max_deferrals`"));
        assert!(matches!(
            deferred(0).fate(true, 1_000),
            Fate::End {
                state: TaskState::Cancelled,
                ..
            }
        ));
    }

    /// A suspension in a halted batch ends cancelled, even on its task's last attempt:
    /// never failed with `suspended` as its outcome.
    #[test]
    fn a_suspension_of_a_halted_batch_ends_cancelled() {
        assert_eq!(
            failed(Outcome::Suspended, 3).fate(false, 0),
            Fate::End {
                state: TaskState::Cancelled,
                outcome: Outcome::Cancelled,
                error: Some(HALTED.into())
            }
        );
    }

    #[test]
    fn retries_while_attempts_are_left_then_fails() {
        let Fate::Retry { not_before, .. } = failed(Outcome::Trap, 1).fate(false, 0) else {
            panic!("the first of three attempts is retried");
        };
        assert!((500_000..=1_000_000).contains(&not_before), "{not_before}");
        assert_eq!(
            failed(Outcome::Trap, 3).fate(false, 0),
            Fate::End {
                state: TaskState::Failed,
                outcome: Outcome::Trap,
                error: Some("boom".into())
            }
        );
    }

    #[test]
    fn a_halted_batch_or_a_cancel_ends_it_cancelled() {
        let halted = failed(Outcome::Trap, 1).fate(true, 0);
        assert!(
            matches!(halted, Fate::End { state: TaskState::Cancelled, error: Some(e), .. } if e == HALTED)
        );
        let asked = Failed {
            cancel_requested: true,
            error: None,
            ..failed(Outcome::Trap, 1)
        };
        assert_eq!(
            asked.fate(false, 0),
            Fate::End {
                state: TaskState::Cancelled,
                outcome: Outcome::Cancelled,
                error: Some("cancelled while running".into())
            }
        );
    }

    #[test]
    fn a_host_error_gives_the_attempt_back_and_backs_off_until_the_cap() {
        let host = |attempts| Failed {
            backoff_ms: 0,
            ..failed(Outcome::HostError, attempts)
        };
        let Fate::Retry {
            not_before,
            given_back,
            ..
        } = host(3).fate(false, 0)
        else {
            panic!("a host error on the last attempt is retried");
        };
        assert!(given_back, "the attempt is not charged");
        // A backoff of 0 asked, yet the third attempt waits 2 to 4 s.
        assert!(
            (2_000_000..=4_000_000).contains(&not_before),
            "{not_before}"
        );
        assert!(matches!(
            host(MAX_ATTEMPTS_WITH_HOST_ERRORS).fate(false, 0),
            Fate::End {
                state: TaskState::Failed,
                outcome: Outcome::HostError,
                ..
            }
        ));
    }
}
