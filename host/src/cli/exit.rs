//! The exit codes of `qhost`: each kind of failure a script may want to tell apart has its
//! own, and an error's code is read from what it is (a refusal by the server, by its
//! status; no answer at all; anything else, as a usage error).

use super::client::{Refusal, unreachable};

/// Done as asked.
pub const SUCCESS: u8 = 0;
/// A task ran and did not succeed (`run`, `submit --wait`, `batch wait`).
pub const TASK_FAILED: u8 = 1;
/// The command line, or a file or value it names, is not usable; or the server refused
/// what was sent as malformed (400), too large (413) or beyond a limit (422).
pub const USAGE: u8 = 2;
/// What the command names does not exist on the server (404).
pub const NOT_FOUND: u8 = 3;
/// The server refused the credential: none, a wrong one, or one that does not open
/// this (401, 403).
pub const REFUSED: u8 = 4;
/// What the command asks for conflicts with the state of what it names (409): a task
/// that is not failed retried, a module in use deleted, a key reused.
pub const CONFLICT: u8 = 5;
/// The server was not reached, did not answer, or asked to try again later (429, 502,
/// 503, 504).
pub const UNREACHABLE: u8 = 6;
/// The server failed in a way it did not expect (500 and any other status).
pub const SERVER_ERROR: u8 = 7;

/// The codes as `--help` lists them.
pub const HELP: &str = "Exit codes:
  0  done as asked
  1  a task ran and did not succeed (run, submit --wait, batch wait)
  2  usage: the command line, or a file or value it names, is not usable (or the server
     refused it as malformed: 400, 413, 422)
  3  not found: what the command names does not exist on the server (404)
  4  refused: no token, a wrong one, or one that does not open this (401, 403)
  5  conflict: the request conflicts with the state of what it names (409)
  6  unreachable: no answer from the server, or it asked to try later (429, 502-504)
  7  the server failed (500)";

/// What the command names is not there, as found on this side (a module name the
/// server's list lacks).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotFound(pub String);

/// A [`NotFound`] error saying `message`.
pub fn not_found(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(NotFound(message.into()))
}

/// The exit code of a failed command.
pub fn code(err: &anyhow::Error) -> u8 {
    if unreachable(err).is_some() {
        return UNREACHABLE;
    }
    if err.chain().any(|e| e.is::<NotFound>()) {
        return NOT_FOUND;
    }
    let refusal = err.chain().find_map(|e| e.downcast_ref::<Refusal>());
    match refusal.map(|r| r.status) {
        None => USAGE,
        Some(400 | 413 | 415 | 422) => USAGE,
        Some(404) => NOT_FOUND,
        Some(401 | 403) => REFUSED,
        Some(409 | 412) => CONFLICT,
        Some(429 | 502..=504) => UNREACHABLE,
        Some(_) => SERVER_ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code `--help` lists is one of the constants, each listed once, in order.
    #[test]
    fn the_help_lists_every_code() {
        let listed: Vec<u8> = HELP
            .lines()
            .filter_map(|l| l.trim_start().split(' ').next()?.parse().ok())
            .collect();
        let codes = [
            SUCCESS,
            TASK_FAILED,
            USAGE,
            NOT_FOUND,
            REFUSED,
            CONFLICT,
            UNREACHABLE,
            SERVER_ERROR,
        ];
        assert_eq!(listed, codes);
    }
}
