//! The half of a submission that needs no database: which tasks a batch takes, where its
//! gate goes, and the state each new task starts in. Both drivers read what these need
//! and write what they decide; a re-drive puts tasks back at the gate the same way.

use super::{BatchId, StoreResult, TaskSpec, TaskState, errors};
use crate::runtime::Digest;

/// Refuses the first task whose module `exists` says is not stored.
pub(crate) fn check_modules(
    specs: &[TaskSpec],
    mut exists: impl FnMut(&Digest) -> StoreResult<bool>,
) -> StoreResult<()> {
    for (index, spec) in specs.iter().enumerate() {
        if !exists(&spec.module)? {
            return Err(errors::unknown_module(index, &spec.module));
        }
    }
    Ok(())
}

/// Refuses the first task whose order is below `started`, the highest order of the batch
/// that has had a task claimed: that order may have begun running, so a lower one could
/// no longer run before it.
pub(crate) fn check_orders(
    specs: &[TaskSpec],
    started: Option<i64>,
    batch: BatchId,
) -> StoreResult<()> {
    let Some(started) = started else {
        return Ok(());
    };
    match specs.iter().enumerate().find(|(_, s)| s.order < started) {
        Some((index, spec)) => Err(errors::order_below_started(
            index, spec.order, started, batch,
        )),
        None => Ok(()),
    }
}

/// The batch's gate once `specs` are in: the lowest order still open, old or new.
pub(crate) fn gate_after(old: Option<i64>, specs: &[TaskSpec]) -> Option<i64> {
    gate_with(old, specs.iter().map(|s| s.order))
}

/// The batch's gate once tasks of `orders` are open again (submitted, or re-driven): the
/// lowest order open, old or new.
pub(crate) fn gate_with(old: Option<i64>, orders: impl IntoIterator<Item = i64>) -> Option<i64> {
    let lowest = orders.into_iter().min();
    match (old, lowest) {
        (Some(old), Some(low)) => Some(old.min(low)),
        (old, low) => old.or(low),
    }
}

/// The state a new task of `order` starts in: ready at the gate, waiting behind it.
pub(crate) fn first_state(order: i64, gate: Option<i64>) -> TaskState {
    if Some(order) == gate {
        TaskState::Ready
    } else {
        TaskState::Waiting
    }
}
