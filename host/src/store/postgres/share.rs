//! The claim's fair share between tenants on PostgreSQL ([`crate::store::fair`] states
//! the rule): the lanes a claim reads, and its rounds, in the claim's transaction. Each
//! round gives the slots left to the lanes left, takes at most that many of each lane's
//! tasks through the claim of `claim.rs`, and drops the lanes that could not use what
//! they were given (their tasks wait on full groups or batches, or another claim holds
//! their counter); the next round gives their slots to the others.
//!
//! Nodes read the lanes at once and serve them apart, each under the tenant counters it
//! locks: the share holds across nodes as each claim's standings say, and the fair clock
//! moves on only when no other claim holds it (it only lifts tenants that held nothing).

use std::collections::{BTreeMap, BTreeSet};

use deadpool_postgres::GenericClient;

use super::claim::{claim_round, follow_up, window};
use super::{PostgresStore, pg};
use crate::store::fair::{self, Lane};
use crate::store::*;

/// The tenants with ready work due and room, with their standing's columns and the clock.
pub(super) const LANES_SQL: &str = include_str!("sql/claim_lanes.sql");
/// The clock moves to the highest standing a claim served; when another claim holds it,
/// that claim moves it.
const CLOCK_SET_SQL: &str = "UPDATE scheduler SET fair_clock = $1 WHERE id IN
    (SELECT id FROM scheduler WHERE fair_clock < $1 FOR UPDATE SKIP LOCKED)";

/// A claim's round of the fair share: the most it takes of each tenant's tasks (a tenant
/// left out: none), and the fair clock it read.
pub(super) struct Share {
    pub caps: BTreeMap<TenantId, i64>,
    pub clock: i64,
}

/// The lanes, but those in `out`, and the clock.
async fn lanes(
    tx: &impl GenericClient,
    now: Micros,
    out: &BTreeSet<TenantId>,
) -> StoreResult<(Vec<Lane>, i64)> {
    let stmt = tx.prepare_cached(LANES_SQL).await.map_err(pg)?;
    let rows = tx.query(&stmt, &[&now]).await.map_err(pg)?;
    let clock = rows.first().map_or(0, |r| r.get::<_, i64>(7));
    let lanes = rows
        .iter()
        .map(|r| Lane {
            tenant: r.get(0),
            weight: i64::from(r.get::<_, i32>(1)),
            used: r.get(2),
            running: i64::from(r.get::<_, i32>(3)),
            slot_micros: r.get(4),
            ended: r.get(5),
            room: r.get::<_, Option<i32>>(6).map(i64::from),
        })
        .filter(|l| !out.contains(&l.tenant))
        .collect();
    Ok((lanes, clock))
}

/// Claims up to `p.max` tasks, dividing them among the tenants with ready work by their
/// fair share; with none, as the claim always does.
pub(super) async fn claim_shared(
    store: &PostgresStore,
    tx: &impl GenericClient,
    p: &ClaimParams,
) -> StoreResult<Claimed> {
    // With the window, in the claim's first round trip.
    let none = BTreeSet::new();
    let ((mut lanes, mut clock), mut rows) =
        tokio::try_join!(lanes(tx, p.now, &none), window(tx, p))?;
    if lanes.is_empty() || p.max == 0 {
        return Ok(claim_round(store, tx, p, rows, None, true).await?.0);
    }
    let mut claimed = Claimed::default();
    // Lanes that could not use all they were given: nothing more of theirs is claimable.
    let mut out: BTreeSet<TenantId> = BTreeSet::new();
    loop {
        let left = p.max - claimed.tasks.len();
        let caps = fair::allot(&lanes, clock, left);
        let round = ClaimParams {
            max: left,
            ..p.clone()
        };
        let share = Share { caps, clock };
        let (got, tenants) = claim_round(store, tx, &round, rows, Some(&share), false).await?;
        let taken = fair::taken(tenants);
        let served = fair::served(&lanes, clock, &taken);
        if served > clock {
            let stmt = tx.prepare_cached(CLOCK_SET_SQL).await.map_err(pg)?;
            tx.execute(&stmt, &[&served]).await.map_err(pg)?;
        }
        claimed.tasks.extend(got.tasks);
        claimed.contended |= got.contended;
        if claimed.tasks.len() == p.max {
            break;
        }
        let short = fair::short(&share.caps, &taken);
        if short.is_empty() {
            break;
        }
        out.extend(short);
        let next = ClaimParams {
            max: p.max - claimed.tasks.len(),
            ..p.clone()
        };
        ((lanes, clock), rows) = tokio::try_join!(self::lanes(tx, p.now, &out), window(tx, &next))?;
        if lanes.is_empty() {
            break;
        }
    }
    claimed.next_due = follow_up(store, tx, p, claimed.tasks.len()).await?;
    Ok(claimed)
}
