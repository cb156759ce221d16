//! The claim's fair share between tenants in SQLite ([`crate::store::fair`] states the
//! rule): the lanes a claim reads, and its rounds. Each round gives the slots left to the
//! lanes left, takes at most that many of each lane's tasks through the claim of
//! `claim.rs`, and drops the lanes that could not use what they were given; the next round
//! gives their slots to the others.

use std::collections::BTreeSet;

use rusqlite::{Transaction, params};

use super::claim::{self, Share};
use super::internal;
use crate::store::fair::{self, Lane};
use crate::store::*;

/// The tenants with ready work due and room, with their standing's columns.
pub(super) const LANES_SQL: &str = include_str!("sql/claim_lanes.sql");
/// Where a lane that held nothing starts.
pub(super) const CLOCK_SQL: &str = "SELECT fair_clock FROM scheduler";
/// The clock moves to the highest standing a claim served.
pub(super) const CLOCK_SET_SQL: &str = "UPDATE scheduler SET fair_clock = ?";

fn lanes(tx: &Transaction<'_>, now: Micros, out: &BTreeSet<TenantId>) -> StoreResult<Vec<Lane>> {
    let rows = tx
        .prepare_cached(LANES_SQL)
        .map_err(internal)?
        .query_map([now], |r| {
            Ok(Lane {
                tenant: r.get(0)?,
                weight: r.get(1)?,
                used: r.get(2)?,
                running: r.get(3)?,
                slot_micros: r.get(4)?,
                ended: r.get(5)?,
                room: r.get(6)?,
            })
        })
        .map_err(internal)?
        .collect::<rusqlite::Result<Vec<Lane>>>()
        .map_err(internal)?;
    Ok(rows
        .into_iter()
        .filter(|l| !out.contains(&l.tenant))
        .collect())
}

/// Claims up to `p.max` tasks, dividing them among the tenants with ready work by their
/// fair share; with none, as the claim always does.
pub(super) fn claim_shared(tx: &Transaction<'_>, p: &ClaimParams) -> StoreResult<Vec<ClaimedTask>> {
    let mut lanes = lanes(tx, p.now, &BTreeSet::new())?;
    if lanes.is_empty() || p.max == 0 {
        return Ok(claim::claim_tasks(tx, p, None)?.0);
    }
    let mut claimed: Vec<ClaimedTask> = Vec::with_capacity(p.max);
    // Lanes that could not use all they were given: nothing more of theirs is claimable.
    let mut out: BTreeSet<TenantId> = BTreeSet::new();
    // One writer: the clock is what this claim makes it.
    let mut clock: i64 = tx
        .prepare_cached(CLOCK_SQL)
        .map_err(internal)?
        .query_row([], |r| r.get(0))
        .map_err(internal)?;
    loop {
        let left = p.max - claimed.len();
        let caps = fair::allot(&lanes, clock, left);
        let round = ClaimParams {
            max: left,
            ..p.clone()
        };
        let (tasks, tenants) = claim::claim_tasks(tx, &round, Some(&Share { caps: &caps, clock }))?;
        let taken = fair::taken(tenants);
        let served = fair::served(&lanes, clock, &taken);
        if served > clock {
            tx.prepare_cached(CLOCK_SET_SQL)
                .map_err(internal)?
                .execute(params![served])
                .map_err(internal)?;
            clock = served;
        }
        claimed.extend(tasks);
        if claimed.len() == p.max {
            break;
        }
        let short = fair::short(&caps, &taken);
        if short.is_empty() {
            break;
        }
        out.extend(short);
        lanes = self::lanes(tx, p.now, &out)?;
        if lanes.is_empty() {
            break;
        }
    }
    Ok(claimed)
}
