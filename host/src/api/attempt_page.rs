//! Attempts as the API gives them in lists and views: each cut short
//! ([`AttemptRecord::cut_to`]), a page bounded by count and by bytes, and read from the
//! store a few at a time, so that the memory one answer takes stays bounded whatever the
//! attempts hold. `GET /v1/tasks/{id}/attempts/{attempt}` gives one whole.

use crate::scheduler::{Result, Scheduler};
use crate::store::{AttemptFilter, AttemptRecord};

/// The most bytes of each long field of an attempt in a list (`/v1/attempts`), and of a
/// task's error in a list of tasks, which the stores read cut to as many characters
/// (`sql/task_list.sql`).
pub const LIST_CUT: usize = 1024;
/// The most bytes of each long field of an attempt in a task's view.
pub const VIEW_CUT: usize = 4096;
/// The most bytes of attempts in one answer, about (at least one attempt is given).
pub const PAGE_BYTES: usize = 8 << 20;
/// Attempts read from the store at a time: whole, each long field up to its limit (64 KiB
/// by default).
const CHUNK: usize = 64;

/// Up to `limit` attempts `filter` selects, in its order, each cut to `cut` bytes, until
/// they take [`PAGE_BYTES`]; with their positions in the log.
pub async fn read(
    scheduler: &Scheduler,
    mut filter: AttemptFilter,
    limit: usize,
    cut: usize,
) -> Result<Vec<(i64, AttemptRecord)>> {
    let mut page = Vec::new();
    let mut bytes = 0;
    while page.len() < limit {
        let want = CHUNK.min(limit - page.len());
        filter.limit = Some(want);
        let chunk = scheduler.attempt_list(filter.clone()).await?;
        let got = chunk.len();
        for (position, mut attempt) in chunk {
            attempt.cut_to(cut);
            let size = size(&attempt);
            if bytes + size > PAGE_BYTES && !page.is_empty() {
                return Ok(page);
            }
            bytes += size;
            if filter.newest_first {
                filter.before = Some(position);
            } else {
                filter.after = Some(position);
            }
            page.push((position, attempt));
        }
        if got < want {
            break;
        }
    }
    Ok(page)
}

/// About the bytes an attempt takes in JSON: its long fields (stdout and stderr twice when
/// they are not UTF-8, as text and base64), and a fixed share for the rest.
fn size(attempt: &AttemptRecord) -> usize {
    let captured = |bytes: &[u8]| match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(_) => bytes.len() * 3,
    };
    512 + attempt.node.len()
        + attempt.group.as_ref().map_or(0, String::len)
        + attempt.module_name.as_ref().map_or(0, String::len)
        + attempt.error.as_ref().map_or(0, String::len)
        + attempt
            .logs
            .iter()
            .map(|line| line.message.len() + 64)
            .sum::<usize>()
        + captured(&attempt.stdout)
        + captured(&attempt.stderr)
}

/// Attempt `number` of `task`, whole.
pub async fn find(
    scheduler: &Scheduler,
    task: crate::store::TaskId,
    number: u32,
) -> Result<Option<AttemptRecord>> {
    let mut filter = AttemptFilter {
        task: Some(task),
        limit: Some(CHUNK),
        ..Default::default()
    };
    loop {
        let chunk = scheduler.attempt_list(filter.clone()).await?;
        let got = chunk.len();
        for (position, attempt) in chunk {
            if attempt.attempt == number {
                return Ok(Some(attempt));
            }
            filter.after = Some(position);
        }
        if got < CHUNK {
            return Ok(None);
        }
    }
}
