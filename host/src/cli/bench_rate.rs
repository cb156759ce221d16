//! `qhost bench --rate 5/s`: a drain where some groups have a rate, and its figures read
//! from the execution log: how many tasks of each rated group started in any 10 s window,
//! against what the rate lets through, and how soon the tasks of the groups without a
//! rate were done (to set beside a drain with no rated group).

use std::collections::{BTreeMap, HashSet};

use crate::scheduler::Scheduler;
use crate::store::{GroupRate, Micros, Store};

/// The span over which a rate is read.
const WINDOW: Micros = 10_000_000;

/// The groups given a rate, by the names the bench gives its groups.
pub(super) struct Rated {
    pub rate: GroupRate,
    pub groups: HashSet<String>,
}

impl Rated {
    /// The rate `text` (`5/s`) on the first `rated` of `groups` groups (all of them when
    /// none is given).
    pub(super) fn new(text: &str, groups: usize, rated: Option<usize>) -> anyhow::Result<Rated> {
        anyhow::ensure!(groups > 0, "--rate needs --groups");
        let rated = rated.unwrap_or(groups);
        anyhow::ensure!(
            (1..=groups).contains(&rated),
            "--rated-groups {rated}: 1 to --groups ({groups})"
        );
        let rate = GroupRate::parse(text, 1).map_err(anyhow::Error::msg)?;
        Ok(Rated {
            rate,
            groups: (0..rated).map(|g| format!("g{g}")).collect(),
        })
    }

    /// Gives each rated group its rate (and no limit on how many run at once beyond the
    /// slots: the rate alone spaces them).
    pub(super) async fn set(&self, scheduler: &Scheduler) -> anyhow::Result<()> {
        for group in &self.groups {
            scheduler.group_set_limit(group.clone(), 1_000_000).await?;
            scheduler
                .group_set_rate(group.clone(), Some(self.rate))
                .await?;
        }
        Ok(())
    }

    /// The figures of the drain that began at `began`, from the execution log.
    pub(super) async fn report(&self, store: &dyn Store, began: Micros) -> anyhow::Result<()> {
        let mut starts: BTreeMap<String, Vec<Micros>> = BTreeMap::new();
        let mut others_done: Option<Micros> = None;
        let mut others = 0usize;
        super::bench::each_attempt(store, |a| {
            match a.group.filter(|g| self.groups.contains(g)) {
                Some(group) => starts.entry(group).or_default().push(a.started_at),
                None => {
                    others += 1;
                    others_done = others_done.max(Some(a.ended_at));
                }
            }
        })
        .await?;
        let expected =
            f64::from(self.rate.limit) * WINDOW as f64 / self.rate.period.as_micros() as f64;
        let (mut fewest, mut most, mut measured) = (usize::MAX, 0usize, 0usize);
        for times in starts.values_mut() {
            times.sort_unstable();
            let (low, high) = window_counts(times);
            if high == 0 {
                // It ran for less than a window: none lies within its run.
                continue;
            }
            measured += 1;
            fewest = fewest.min(low);
            most = most.max(high);
        }
        if most == 0 {
            outln!("rated groups: no group ran longer than a 10 s window")?;
        } else {
            outln!(
                "rated groups: {measured} of {} ran longer than 10 s: {} to {} starts per 10 s window within their runs, the rate lets {expected} through: {:+.1}% to {:+.1}%",
                starts.len(),
                fewest,
                most,
                100.0 * (fewest as f64 - expected) / expected,
                100.0 * (most as f64 - expected) / expected,
            )?;
            let error = (fewest as f64 - expected)
                .abs()
                .max((most as f64 - expected).abs());
            outln!("rate error: {:.1}%", 100.0 * error / expected)?;
        }
        if let Some(done) = others_done {
            let seconds = (done - began) as f64 / 1e6;
            outln!(
                "the {others} tasks of groups without a rate were done in {seconds:.2} s: {:.0} tasks/s",
                others as f64 / seconds
            )?;
        }
        Ok(())
    }
}

/// The fewest and the most of sorted `times` in any window of [`WINDOW`] that lies
/// within the first and the last of them (none: 0, 0).
fn window_counts(times: &[Micros]) -> (usize, usize) {
    let Some(&last) = times.last() else {
        return (0, 0);
    };
    let (mut fewest, mut most) = (usize::MAX, 0);
    for (i, &start) in times.iter().enumerate() {
        if start + WINDOW > last {
            break;
        }
        // The most: a window that opens at a start, [start, start + WINDOW).
        let opened = times[i..].partition_point(|&t| t < start + WINDOW);
        // The fewest: one that opens just after it, (start, start + WINDOW].
        let after = times[i + 1..].partition_point(|&t| t <= start + WINDOW);
        most = most.max(opened);
        fewest = fewest.min(after);
    }
    if most == 0 { (0, 0) } else { (fewest, most) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_count_the_starts_within_them() {
        // Five a second for 20 s.
        let even: Vec<Micros> = (0..100).map(|i| i * 200_000).collect();
        assert_eq!(window_counts(&even), (50, 50));
        let mut burst = even.clone();
        burst.push(5_000_001);
        burst.sort_unstable();
        assert_eq!(window_counts(&burst), (50, 51));
        assert_eq!(window_counts(&even[..10]), (0, 0));
    }
}
