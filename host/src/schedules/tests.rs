//! Ticks with a clock the tests hold: daylight-saving changes in a named zone, and what
//! fires after an outage under each `catch_up` policy.

use super::timing::*;
use crate::store::Micros;
use crate::units::parse_time;

fn at(text: &str) -> Micros {
    parse_time(text).unwrap()
}

fn ticks(timing: &Timing, from: &str, until: &str) -> Vec<String> {
    let (mut t, until) = (at(from), at(until));
    let mut out = Vec::new();
    while let Some(next) = timing.next_after(t).filter(|&n| n <= until) {
        out.push(jiff::Timestamp::from_microsecond(next).unwrap().to_string());
        t = next;
    }
    out
}

#[test]
fn a_daily_tick_keeps_its_local_time_across_daylight_saving_changes() {
    let nine = Timing::new("0 9 * * *", "Europe/Berlin").unwrap();
    // Berlin moves from +01:00 to +02:00 on 29 March 2026 and back on 25 October.
    assert_eq!(
        ticks(&nine, "2026-03-28T00:00:00Z", "2026-03-30T00:00:00Z"),
        ["2026-03-28T08:00:00Z", "2026-03-29T07:00:00Z"]
    );
    assert_eq!(
        ticks(&nine, "2026-10-24T00:00:00Z", "2026-10-26T00:00:00Z"),
        ["2026-10-24T07:00:00Z", "2026-10-25T08:00:00Z"]
    );
    // 02:30 does not exist on 29 March: the tick comes once, right after the gap; and it
    // comes once on 25 October, when 02:30 happens twice.
    let half_past_two = Timing::new("30 2 * * *", "Europe/Berlin").unwrap();
    let spring = ticks(
        &half_past_two,
        "2026-03-28T12:00:00Z",
        "2026-03-29T12:00:00Z",
    );
    assert_eq!(spring, ["2026-03-29T01:00:00Z"]);
    let autumn = ticks(
        &half_past_two,
        "2026-10-24T12:00:00Z",
        "2026-10-25T12:00:00Z",
    );
    assert_eq!(autumn.len(), 1, "{autumn:?}");
}

#[test]
fn seconds_are_optional_and_bad_fields_are_named() {
    let every_ten_seconds = Timing::new("*/10 * * * * *", "UTC").unwrap();
    assert_eq!(
        ticks(
            &every_ten_seconds,
            "2026-01-01T00:00:05Z",
            "2026-01-01T00:00:30Z"
        ),
        [
            "2026-01-01T00:00:10Z",
            "2026-01-01T00:00:20Z",
            "2026-01-01T00:00:30Z"
        ]
    );
    // Strictly after a time between ticks, and strictly after a tick itself.
    assert_eq!(
        every_ten_seconds.next_after(at("2026-01-01T00:00:10Z") + 500_000),
        Some(at("2026-01-01T00:00:20Z"))
    );
    let err = Timing::new("61 * * * *", "UTC").unwrap_err();
    assert!(err.starts_with("field `cron`: `61 * * * *`"), "{err}");
    let err = Timing::new("* * * * *", "Mars/Olympus").unwrap_err();
    assert!(err.starts_with("field `timezone`: `Mars/Olympus`"), "{err}");
    let err = "all:0".parse::<CatchUp>().unwrap_err();
    assert!(err.starts_with("field `catch_up`: `all:0`"), "{err}");
    assert_eq!("all:3".parse::<CatchUp>().unwrap(), CatchUp::All(3));
}

#[test]
fn after_an_outage_missed_ticks_fire_as_catch_up_says() {
    let hourly = Timing::new("0 * * * *", "UTC").unwrap();
    let first_missed = at("2026-01-01T01:00:00Z");
    // Down from before 01:00 until 05:00:30: 01:00 to 04:00 were missed, 05:00 is on time.
    let now = at("2026-01-01T05:00:30Z");
    let hours = |hs: &[u32]| -> Vec<Micros> {
        hs.iter()
            .map(|h| at(&format!("2026-01-01T{h:02}:00:00Z")))
            .collect()
    };
    let next = Some(at("2026-01-01T06:00:00Z"));
    assert_eq!(
        due(&hourly, first_missed, now, CatchUp::None),
        Due {
            fire: hours(&[5]),
            missed: 4,
            next_due: next
        }
    );
    assert_eq!(
        due(&hourly, first_missed, now, CatchUp::Last),
        Due {
            fire: hours(&[4, 5]),
            missed: 3,
            next_due: next
        }
    );
    assert_eq!(
        due(&hourly, first_missed, now, CatchUp::All(2)),
        Due {
            fire: hours(&[3, 4, 5]),
            missed: 2,
            next_due: next
        }
    );
    assert_eq!(
        due(&hourly, first_missed, now, CatchUp::All(100)),
        Due {
            fire: hours(&[1, 2, 3, 4, 5]),
            missed: 0,
            next_due: next
        }
    );
    // Nothing due yet: nothing fires, and the same tick is still awaited.
    let early = at("2026-01-01T00:59:59Z");
    assert_eq!(
        due(&hourly, first_missed, early, CatchUp::Last),
        Due {
            fire: vec![],
            missed: 0,
            next_due: Some(first_missed)
        }
    );
}

#[test]
fn a_long_outage_under_a_frequent_schedule_is_counted_within_bounds() {
    let every_second = Timing::new("* * * * * *", "UTC").unwrap();
    let from = at("2026-01-01T00:00:00Z");
    let now = at("2026-01-08T00:00:00Z");
    let d = due(&every_second, from, now, CatchUp::Last);
    assert_eq!(d.missed, MAX_COUNTED - 1);
    // The last missed tick, then the minute of ticks on time.
    assert_eq!(d.fire.first(), Some(&(now - MISSED_AFTER)));
    assert_eq!(d.fire.len(), 61);
    assert_eq!(d.next_due, Some(now + 1_000_000));
}
