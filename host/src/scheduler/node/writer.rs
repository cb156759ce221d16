//! The completion writer: records what runs report (starts, completions, hand-backs) in
//! few transactions, then wakes the claim loop and the batches' waiters. A claim the claim
//! loop left standing goes with the next completions (`standing.rs`).
//!
//! The writer keeps retrying while the store fails (a database restarting): its
//! completions are the only record of those attempts. A batch of them that fails is
//! written again one by one, so that a record the store refuses (too large for it) holds
//! up no other; that attempt is recorded failed with a short error instead. A stopping
//! node gives its writer a grace period, then gives up, logging what was not written.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::standing::{Standing, Taken};
use super::writes::Writes;
use crate::scheduler::Scheduler;
use crate::store::*;

/// Completions written in one transaction at most.
pub(super) const COMPLETION_BATCH: usize = 2048;

/// What the writer records: how runs went, in the order they went.
pub(super) enum Done {
    /// A reserved task started on a slot.
    Started(Start),
    Completed(Box<Completion>),
    /// A reserved task the node will not start goes back to the queue.
    HandedBack(TaskId, i64),
}

/// What one write records: starts, completions and hand-backs, in few transactions.
#[derive(Default)]
struct Report {
    starts: Vec<Start>,
    completions: Vec<Completion>,
    handed_back: Vec<(TaskId, i64)>,
}

impl Report {
    fn of(messages: impl IntoIterator<Item = Done>) -> Report {
        let mut report = Report::default();
        for message in messages {
            report.add(message);
        }
        // A task that ended in the same write needs no start mark: most short ones.
        if !report.starts.is_empty() {
            let ended: HashSet<TaskId> = report
                .completions
                .iter()
                .map(|c| c.task)
                .chain(report.handed_back.iter().map(|&(task, _)| task))
                .collect();
            report.starts.retain(|s| !ended.contains(&s.task));
        }
        report
    }

    /// Tasks this report lets go of.
    fn ends(&self) -> usize {
        self.completions.len() + self.handed_back.len()
    }

    fn add(&mut self, message: Done) {
        match message {
            Done::Started(start) => self.starts.push(start),
            Done::Completed(c) => self.completions.push(*c),
            Done::HandedBack(task, token) => self.handed_back.push((task, token)),
        }
    }

    fn extend(&mut self, other: Report) {
        self.starts.extend(other.starts);
        self.completions.extend(other.completions);
        self.handed_back.extend(other.handed_back);
    }

    /// Logs what a node that stops could not write: those attempts' ends are lost, and
    /// their tasks run again once their leases expire (or this node starts again).
    fn log_lost(&self) {
        if self.starts.is_empty() && self.ends() == 0 {
            return;
        }
        let tasks: Vec<TaskId> = self
            .completions
            .iter()
            .map(|c| c.task)
            .chain(self.handed_back.iter().map(|&(task, _)| task))
            .collect();
        tracing::error!(
            completions = self.completions.len(),
            hand_backs = self.handed_back.len(),
            start_marks = self.starts.len(),
            ?tasks,
            "stopping without writing what the store would not take: these tasks run again \
             once their leases expire"
        );
    }
}

/// Writes starts and completions as they come, many per transaction, then wakes the
/// claim loop and the waiters of the batches whose tasks ended; claims in the same
/// transaction for a claim left `standing`. Once `give_up` is cancelled (the node stops,
/// and the store has taken nothing for a grace period), logs what it could not write and
/// ends.
pub(super) async fn write_completions(
    scheduler: Arc<Scheduler>,
    mut done: mpsc::UnboundedReceiver<Done>,
    held: Arc<watch::Sender<usize>>,
    standing: Arc<Standing>,
    writes: Arc<Writes>,
    give_up: CancellationToken,
) {
    let mut buffer = Vec::new();
    let mut unwritten = loop {
        let received = tokio::select! {
            received = done.recv_many(&mut buffer, COMPLETION_BATCH) => received,
            () = give_up.cancelled() => break Report::default(),
        };
        if received == 0 {
            return;
        }
        let report = Report::of(buffer.drain(..));
        let ends = report.ends();
        // Completions may make tasks ready: a standing claim goes with them.
        let ask = if report.completions.is_empty() || !scheduler.store.claims_in_reports() {
            None
        } else {
            standing.take(writes.count())
        };
        let handed_back = !report.handed_back.is_empty();
        let claimed = match write_report(&scheduler, &standing, report, ask, &give_up).await {
            Ok(Written {
                mut batches,
                claimed,
            }) => {
                batches.sort_unstable();
                batches.dedup();
                for batch in batches {
                    scheduler.notify_batch(batch);
                }
                claimed
            }
            Err(unwritten) => break unwritten,
        };
        if ends > 0 {
            held.send_modify(|n| *n -= ends);
        }
        // A claim in the same transaction saw what these ends made claimable; tasks
        // handed back after it, it did not.
        writes.wrote(ends > 0 && (!claimed || handed_back));
    };
    done.close();
    while let Ok(message) = done.try_recv() {
        unwritten.add(message);
    }
    unwritten.log_lost();
}

/// What a report's write did: the batches whose tasks started or ended, and whether it
/// claimed in the same transaction for a standing claim.
struct Written {
    batches: Vec<BatchId>,
    claimed: bool,
}

/// Writes a report, with the standing claim `ask` if any: in one go, or else piece by
/// piece, so that a completion the store refuses holds up no other (the claim then goes
/// unanswered, and the claim loop claims itself). Retries while the store fails, until
/// `give_up`; then returns what it did not write.
async fn write_report(
    scheduler: &Scheduler,
    standing: &Standing,
    mut report: Report,
    ask: Option<Taken>,
    give_up: &CancellationToken,
) -> Result<Written, Report> {
    let mut batches = Vec::new();
    let claimed = ask.is_some();
    let ask = ask.map(|ask| (ask, standing));
    let err = tokio::select! {
        written = write(scheduler, &mut report, &mut batches, ask) => match written {
            Ok(()) => return Ok(Written { batches, claimed }),
            Err(err) => err,
        },
        () = give_up.cancelled() => return Err(report),
    };
    tracing::warn!(
        "writing {} completion(s) at once failed, writing them one by one: {err:#}",
        report.completions.len()
    );
    let completions = std::mem::take(&mut report.completions);
    let mut pieces = std::iter::once(report).chain(completions.into_iter().map(|c| Report {
        completions: vec![c],
        ..Report::default()
    }));
    while let Some(piece) = pieces.next() {
        if let Err(mut unwritten) = write_piece(scheduler, piece, &mut batches, give_up).await {
            pieces.for_each(|piece| unwritten.extend(piece));
            return Err(unwritten);
        }
    }
    Ok(Written {
        batches,
        claimed: false,
    })
}

/// Writes a report of at most one completion, retrying while the store fails. A completion
/// the store refuses is recorded instead as a failed attempt with a short error, so that
/// the task goes on (a retry, or its end); if even that is refused, the task is handed back.
async fn write_piece(
    scheduler: &Scheduler,
    mut piece: Report,
    batches: &mut Vec<BatchId>,
    give_up: &CancellationToken,
) -> Result<(), Report> {
    let mut delay = Duration::from_millis(50);
    let mut refusals = 0;
    loop {
        let err = tokio::select! {
            written = write(scheduler, &mut piece, batches, None) => match written {
                Ok(()) => return Ok(()),
                Err(err) => err,
            },
            () = give_up.cancelled() => return Err(piece),
        };
        if err.is_refusal()
            && let Some(refused) = piece.completions.pop()
        {
            refusals += 1;
            tracing::error!(
                task = refused.task,
                "the store refused the record of an attempt, recording it as failed: {err:#}"
            );
            if refusals == 1 {
                piece.completions.push(unstorable(refused, &err));
            } else {
                piece.handed_back.push((refused.task, refused.lease_token));
            }
            continue;
        }
        // Keep the completions: they are the only record of these attempts.
        tracing::error!(
            "writing {} completion(s) failed, retrying in {}: {err:#}",
            piece.completions.len(),
            humantime::format_duration(delay)
        );
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = give_up.cancelled() => return Err(piece),
        }
        delay = (delay * 2).min(Duration::from_secs(5));
    }
}

/// What is recorded of an attempt whose own record the store refused: a failed attempt
/// with a short error saying why, and nothing the run produced.
fn unstorable(refused: Completion, err: &StoreError) -> Completion {
    let error = format!("the attempt's record could not be stored: {err}");
    Completion {
        defer: None,
        outcome: crate::runtime::Outcome::Trap,
        error: Some(crate::runtime::outcome::cut_text(error, 1024)),
        output: None,
        logs: Vec::new(),
        stdout: Vec::new(),
        stderr: Vec::new(),
        ..refused
    }
}

/// Writes what `report` holds, each part taken out of it once written, so that a retry
/// writes only what is left; adds the batches whose tasks started or ended to `batches`.
/// Claims for `ask` in the same transaction, and answers it; tasks claimed for a claim
/// loop that no longer waits are handed back.
async fn write(
    scheduler: &Scheduler,
    report: &mut Report,
    batches: &mut Vec<BatchId>,
    ask: Option<(Taken, &Standing)>,
) -> StoreResult<()> {
    if !report.starts.is_empty() || !report.completions.is_empty() {
        let starts = report.starts.clone();
        let completions = report.completions.clone();
        let result = match ask {
            None => {
                let now = now_micros();
                scheduler
                    .store
                    .task_report(starts, completions, now)
                    .await?
            }
            Some((taken, standing)) => {
                let claim = ClaimParams {
                    node: scheduler.config.node.clone(),
                    max: taken.max,
                    now: now_micros(),
                    lease: scheduler.config.lease,
                };
                let (result, claimed) = scheduler
                    .store
                    .task_report_claim(starts, completions, claim)
                    .await?;
                if let Err(unwanted) = standing.answer(taken, claimed) {
                    let tasks = unwanted.tasks.iter().map(|t| (t.id, t.lease_token));
                    report.handed_back.extend(tasks);
                }
                result
            }
        };
        // The batches' event streams announce the starts.
        batches.extend(report.starts.iter().map(|s| s.batch));
        report.starts.clear();
        report.completions.clear();
        if result.hooked {
            scheduler.hooks_wake.notify_one();
        }
        if result.tenant_held {
            // What this node reserved of the held tenant must not start.
            scheduler.reclaim.notify_one();
        }
        if result.stale > 0 {
            tracing::warn!(
                stale = result.stale,
                "completions of rescued attempts were ignored"
            );
        }
        batches.extend(result.ended.iter().map(|&(_, batch)| batch));
    }
    if !report.handed_back.is_empty() {
        let result = scheduler
            .store
            .task_hand_back(report.handed_back.clone(), now_micros())
            .await?;
        report.handed_back.clear();
        if result.hooked {
            scheduler.hooks_wake.notify_one();
        }
        batches.extend(result.ended.iter().map(|&(_, batch)| batch));
    }
    batches.sort_unstable();
    batches.dedup();
    Ok(())
}
