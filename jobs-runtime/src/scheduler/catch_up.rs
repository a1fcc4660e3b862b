//! What a due task fires: its one due occurrence, or, after downtime, what its catch-up policy
//! says about the occurrences it missed.

use super::cron::Cron;
use crate::clock::Timestamp;
use crate::task::CatchUp;

/// The plan for one due task in one round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The occurrences to fire, oldest first, each with the watermark its fire moves to.
    pub fires: Vec<(Timestamp, Timestamp)>,
}

/// Plans a due task: `first` is its first occurrence after the watermark (`first <= now`).
pub(crate) fn plan(
    cron: &Cron,
    policy: CatchUp,
    max_catch_up: u32,
    first: Timestamp,
    now: Timestamp,
) -> Plan {
    let second = cron.next_after(first);
    let missed_more = second.is_some_and(|s| s <= now);
    if !missed_more {
        return Plan {
            fires: vec![(first, first)],
        };
    }
    match policy {
        CatchUp::Skip => {
            let latest = latest_at_or_before(cron, first, now);
            Plan {
                fires: vec![(latest, latest)],
            }
        }
        // The earliest fires; the watermark passes every other missed occurrence.
        CatchUp::RunOnce => Plan {
            fires: vec![(first, now)],
        },
        CatchUp::RunAll => {
            let mut fires = vec![(first, first)];
            let mut next = second;
            while let Some(at) = next {
                if at > now || fires.len() >= max_catch_up as usize {
                    break;
                }
                fires.push((at, at));
                next = cron.next_after(at);
            }
            Plan { fires }
        }
    }
}

/// The latest occurrence at or before `now`, given `first`, an occurrence at or before it, by
/// bisection over `[first, now]`: about log2(gap in minutes) resolutions (8 for three hours, 19
/// for a year), whatever the cron's density.
pub(crate) fn latest_at_or_before(cron: &Cron, first: Timestamp, now: Timestamp) -> Timestamp {
    // Invariant: `lo` is an occurrence, and none lies in (hi, now].
    let mut lo = first;
    let mut hi = now;
    // Occurrences are whole minutes apart: inside a window under a minute, `lo` is the last.
    while hi - lo >= chrono::Duration::minutes(1) {
        let mid = lo + (hi - lo) / 2;
        match cron.next_after(mid) {
            Some(at) if at <= now => lo = at,
            _ => hi = mid,
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Duration, Utc};

    fn at(s: &str) -> Timestamp {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    /// The latest by walking every occurrence: the reference the bisection must match.
    fn walk(cron: &Cron, first: Timestamp, now: Timestamp) -> Timestamp {
        let mut last = first;
        while let Some(n) = cron.next_after(last).filter(|n| *n <= now) {
            last = n;
        }
        last
    }

    #[test]
    fn bisection_finds_the_true_latest_with_few_evaluations() {
        for (expr, tz, gap, bound) in [
            ("*/5 * * * *", "UTC", Duration::hours(3), 25),
            ("* * * * *", "UTC", Duration::hours(3), 25),
            ("17 */2 * * *", "Europe/Paris", Duration::days(365), 40),
            (
                "*/7 9-17 * * 1-5",
                "America/New_York",
                Duration::days(365),
                40,
            ),
            ("0 0 1 * *", "UTC", Duration::days(365), 40),
        ] {
            let cron = Cron::parse("t", expr, tz).unwrap();
            let start = at("2030-01-01T00:00:00Z");
            let first = cron.next_after(start).unwrap();
            let now = start + gap + Duration::seconds(13);
            let before = cron.evaluations();
            let latest = latest_at_or_before(&cron, first, now);
            let spent = cron.evaluations() - before;
            assert_eq!(latest, walk(&cron, first, now), "{expr} in {tz}");
            assert!(spent <= bound, "{expr}: {spent} evaluations for {gap}");
            println!("{expr} ({tz}) over {gap}: {spent} cron evaluations");
        }
    }

    #[test]
    fn plans_per_policy() {
        let cron = Cron::parse("t", "0 * * * *", "UTC").unwrap();
        let first = at("2030-01-01T01:00:00Z");
        let now = at("2030-01-01T05:30:00Z");
        let skip = plan(&cron, CatchUp::Skip, 10, first, now);
        assert_eq!(
            skip.fires,
            vec![(at("2030-01-01T05:00:00Z"), at("2030-01-01T05:00:00Z"))]
        );
        let once = plan(&cron, CatchUp::RunOnce, 10, first, now);
        assert_eq!(once.fires, vec![(first, now)]);
        let all = plan(&cron, CatchUp::RunAll, 3, first, now);
        assert_eq!(all.fires.len(), 3);
        assert_eq!(all.fires[2].0, at("2030-01-01T03:00:00Z"));
        let due = plan(&cron, CatchUp::Skip, 10, first, at("2030-01-01T01:00:00Z"));
        assert_eq!(due.fires, vec![(first, first)]);
    }
}
