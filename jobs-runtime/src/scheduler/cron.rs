//! A task's schedule: a standard 5-field cron read in an IANA zone, resolved to instants with
//! the reference's DST rules.
//!
//! - Spring-forward gap: a local time the zone skips fires at the zone's next valid instant (the
//!   end of the gap), once.
//! - Fall-back overlap: a fixed-time cron (its minute and hour fields are neither `*` nor `*/n`,
//!   e.g. `30 1 * * *`) fires ONCE, on the first pass; an interval cron (`*/5 * * * *`,
//!   `0 * * * *`) fires in both passes.
//!
//! The cron is read by the dialect `#[task]` checks at compile time (`jobs_grammar::cron`), and
//! evaluated on the zone's wall-clock timeline by the `cron` crate, given the grammar's
//! translation (every selected value spelled out); each wall-clock candidate is then mapped to
//! the instants it stands for.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{Duration, LocalResult, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;
use jobs_grammar::zone::parse_zone;

use crate::clock::Timestamp;
use crate::error::{ErrorCode, JobError};

/// The widest shift between a zone's offsets around one transition that the resolver allows for.
const SPAN: Duration = Duration::hours(3);
/// Wall-clock candidates one resolution looks at, at most.
const MAX_SCAN: usize = 10_000;

/// A parsed schedule in its zone, counting how many cron candidates it evaluated.
#[derive(Debug)]
pub(crate) struct Cron {
    /// One schedule; two when both day fields are restricted, since standard cron then fires
    /// on a day matching EITHER field (the `cron` crate alone would ask for both).
    schedules: Vec<cron::Schedule>,
    tz: Tz,
    interval: bool,
    evaluations: AtomicU64,
}

impl Cron {
    /// Parses a 5-field cron and an IANA zone. `X_INVARIANT` when either is refused.
    pub(crate) fn parse(task: &str, expr: &str, tz: &str) -> Result<Cron, JobError> {
        let tz = parse_tz(task, tz)?;
        let refuse = |why: String| {
            JobError::new(
                ErrorCode::Invariant,
                format!("the cron `{expr}` of task `{task}` is invalid: {why}"),
            )
            .with_fix("write a standard 5-field cron: minute hour day-of-month month day-of-week, e.g. `30 9 * * 1-5`")
        };
        let cron = jobs_grammar::cron::Cron::parse(expr).map_err(|e| refuse(e.to_string()))?;
        let schedules = cron
            .quartz_expressions()
            .iter()
            .map(|text| cron::Schedule::from_str(text))
            .collect::<Result<Vec<_>, _>>()
            // The grammar spells out only values the `cron` crate reads; this is a bug if seen.
            .map_err(|e| refuse(format!("its evaluator refused it: {e}")))?;
        Ok(Cron {
            schedules,
            tz,
            interval: cron.is_interval(),
            evaluations: AtomicU64::new(0),
        })
    }

    /// The zone.
    pub(crate) fn tz(&self) -> Tz {
        self.tz
    }

    /// How many cron candidates it has evaluated so far.
    pub(crate) fn evaluations(&self) -> u64 {
        self.evaluations.load(Ordering::Relaxed)
    }

    /// The first occurrence strictly after `from`.
    pub(crate) fn next_after(&self, from: Timestamp) -> Option<Timestamp> {
        self.schedules
            .iter()
            .filter_map(|schedule| self.next_after_in(schedule, from))
            .min()
    }

    fn next_after_in(&self, schedule: &cron::Schedule, from: Timestamp) -> Option<Timestamp> {
        // Past a fall-back transition within SPAN, the wall clock reads earlier than it does at
        // `from`: start the scan that much earlier.
        let low =
            from.naive_utc() + Duration::seconds(self.offset(from).min(self.offset(from + SPAN)));
        let mut candidates = schedule.after(&Utc.from_utc_datetime(&low));
        let mut best: Option<(Timestamp, NaiveDateTime)> = None;
        for _ in 0..MAX_SCAN {
            let Some(candidate) = candidates.next() else {
                break;
            };
            self.evaluations.fetch_add(1, Ordering::Relaxed);
            let wall = candidate.naive_utc();
            if let Some((_, best_wall)) = best {
                if wall > best_wall + SPAN {
                    break;
                }
            }
            for at in self.instants(wall) {
                if at > from && best.is_none_or(|(b, _)| at < b) {
                    best = Some((at, wall));
                }
            }
            // Away from any transition the wall clock is monotone: the first answer is it.
            if let Some((at, _)) = best {
                if self.stable(at) {
                    break;
                }
            }
        }
        best.map(|(at, _)| at)
    }

    /// The instants a wall-clock time stands for, with the DST rules.
    fn instants(&self, wall: NaiveDateTime) -> Vec<Timestamp> {
        match self.tz.from_local_datetime(&wall) {
            LocalResult::Single(at) => vec![at.with_timezone(&Utc)],
            LocalResult::Ambiguous(first, second) if self.interval => {
                vec![first.with_timezone(&Utc), second.with_timezone(&Utc)]
            }
            LocalResult::Ambiguous(first, _) => vec![first.with_timezone(&Utc)],
            LocalResult::None => {
                // In a gap: the zone's next valid instant.
                (1..=24 * 60)
                    .map(|m| wall + Duration::minutes(m))
                    .find_map(|w| self.tz.from_local_datetime(&w).earliest())
                    .map(|at| at.with_timezone(&Utc))
                    .into_iter()
                    .collect()
            }
        }
    }

    fn offset(&self, at: Timestamp) -> i64 {
        i64::from(
            self.tz
                .offset_from_utc_datetime(&at.naive_utc())
                .fix()
                .local_minus_utc(),
        )
    }

    /// No transition within SPAN either side of `at`.
    fn stable(&self, at: Timestamp) -> bool {
        let here = self.offset(at);
        self.offset(at - SPAN) == here && self.offset(at + SPAN) == here
    }
}

/// An IANA zone, or `X_INVARIANT` naming the zone that was probably meant (`Bogota` ->
/// `America/Bogota`), found as `#[task]` finds it at compile time.
pub(crate) fn parse_tz(task: &str, tz: &str) -> Result<Tz, JobError> {
    parse_zone(tz).map_err(|e| {
        JobError::new(
            ErrorCode::Invariant,
            format!("the tz `{tz}` of task `{task}` is not an IANA time zone"),
        )
        .with_fix(e.fix())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::DateTime;

    fn at(s: &str) -> Timestamp {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn run(cron: &Cron, from: &str, n: usize) -> Vec<String> {
        let mut out = Vec::new();
        let mut t = at(from);
        for _ in 0..n {
            t = cron.next_after(t).unwrap();
            out.push(t.to_rfc3339());
        }
        out
    }

    #[test]
    fn every_five_minutes_in_utc() {
        let cron = Cron::parse("t", "*/5 * * * *", "UTC").unwrap();
        assert_eq!(
            run(&cron, "2030-01-01T00:00:00Z", 3),
            [
                "2030-01-01T00:05:00+00:00",
                "2030-01-01T00:10:00+00:00",
                "2030-01-01T00:15:00+00:00"
            ]
        );
        assert_eq!(
            cron.evaluations(),
            3,
            "one evaluation per resolution away from a transition"
        );
    }

    #[test]
    fn both_day_fields_restricted_fire_on_either() {
        // The 13th of the month, or any Friday (2030-09-06 is a Friday, the 13th a Friday too).
        let cron = Cron::parse("t", "0 12 13 * 5", "UTC").unwrap();
        assert_eq!(
            run(&cron, "2030-09-01T00:00:00Z", 4),
            [
                "2030-09-06T12:00:00+00:00",
                "2030-09-13T12:00:00+00:00",
                "2030-09-20T12:00:00+00:00",
                "2030-09-27T12:00:00+00:00",
            ]
        );
        let cron = Cron::parse("t", "0 12 1 * 1", "UTC").unwrap();
        // 2030-10-01 is a Tuesday: the 1st fires although it is no Monday.
        assert_eq!(
            run(&cron, "2030-09-29T00:00:00Z", 2),
            ["2030-09-30T12:00:00+00:00", "2030-10-01T12:00:00+00:00"]
        );
    }

    #[test]
    fn day_of_week_is_standard() {
        // 2030-01-01 is a Tuesday. 1-5 is Monday to Friday.
        let cron = Cron::parse("t", "0 9 * * 1-5", "UTC").unwrap();
        assert_eq!(
            run(&cron, "2030-01-03T12:00:00Z", 2),
            ["2030-01-04T09:00:00+00:00", "2030-01-07T09:00:00+00:00"]
        );
        let sunday = Cron::parse("t", "0 9 * * 0", "UTC").unwrap();
        let seven = Cron::parse("t", "0 9 * * 7", "UTC").unwrap();
        assert_eq!(
            run(&sunday, "2030-01-01T00:00:00Z", 1),
            ["2030-01-06T09:00:00+00:00"]
        );
        assert_eq!(
            run(&seven, "2030-01-01T00:00:00Z", 1),
            ["2030-01-06T09:00:00+00:00"]
        );
        // 5/2 is 5-7/2: Friday and Sunday (7), as `#[task]` reads it.
        let step = Cron::parse("t", "0 9 * * 5/2", "UTC").unwrap();
        assert_eq!(
            run(&step, "2030-01-01T00:00:00Z", 3),
            [
                "2030-01-04T09:00:00+00:00",
                "2030-01-06T09:00:00+00:00",
                "2030-01-11T09:00:00+00:00"
            ]
        );
    }

    #[test]
    fn spring_forward_gap_fires_at_the_next_valid_instant_once() {
        // New York, 2030-03-10: 02:00 EST jumps to 03:00 EDT (07:00Z).
        let fixed = Cron::parse("t", "30 2 * * *", "America/New_York").unwrap();
        assert_eq!(
            run(&fixed, "2030-03-09T12:00:00Z", 3),
            [
                "2030-03-10T07:00:00+00:00", // 03:00 EDT, the gap's end
                "2030-03-11T06:30:00+00:00", // 02:30 EDT
                "2030-03-12T06:30:00+00:00",
            ]
        );
        let interval = Cron::parse("t", "*/30 * * * *", "America/New_York").unwrap();
        assert_eq!(
            run(&interval, "2030-03-10T06:00:00Z", 4),
            [
                "2030-03-10T06:30:00+00:00", // 01:30 EST
                "2030-03-10T07:00:00+00:00", // 02:00 and 02:30 collapse into 03:00 EDT
                "2030-03-10T07:30:00+00:00",
                "2030-03-10T08:00:00+00:00",
            ]
        );
    }

    #[test]
    fn fall_back_overlap_fixed_fires_once_interval_fires_both_passes() {
        // New York, 2030-11-03: 02:00 EDT falls back to 01:00 EST; 01:xx happens twice.
        let fixed = Cron::parse("t", "30 1 * * *", "America/New_York").unwrap();
        assert_eq!(
            run(&fixed, "2030-11-02T12:00:00Z", 2),
            ["2030-11-03T05:30:00+00:00", "2030-11-04T06:30:00+00:00"]
        );
        let hourly = Cron::parse("t", "0 * * * *", "America/New_York").unwrap();
        assert_eq!(
            run(&hourly, "2030-11-03T03:30:00Z", 4),
            [
                "2030-11-03T04:00:00+00:00", // 00:00 EDT
                "2030-11-03T05:00:00+00:00", // 01:00 EDT
                "2030-11-03T06:00:00+00:00", // 01:00 EST
                "2030-11-03T07:00:00+00:00", // 02:00 EST
            ]
        );
        let paris = Cron::parse("t", "*/30 2 * * *", "Europe/Paris").unwrap();
        assert_eq!(
            run(&paris, "2030-10-26T23:00:00Z", 4),
            [
                "2030-10-27T00:00:00+00:00", // 02:00 CEST
                "2030-10-27T00:30:00+00:00", // 02:30 CEST
                "2030-10-27T01:00:00+00:00", // 02:00 CET
                "2030-10-27T01:30:00+00:00", // 02:30 CET
            ]
        );
    }

    #[test]
    fn refusals() {
        let err = Cron::parse("t", "* * * *", "UTC").unwrap_err();
        assert!(err.is(ErrorCode::Invariant) && err.message().contains("found 4"));
        let err = Cron::parse("t", "0 0 9 * * *", "UTC").unwrap_err();
        assert!(err.message().contains("remove the seconds field"), "{err}");
        assert!(Cron::parse("t", "61 * * * *", "UTC").is_err());
        assert!(Cron::parse("t", "* * * * 9", "UTC").is_err());
        let err = Cron::parse("t", "* * * * *", "Bogota").unwrap_err();
        assert!(err.is(ErrorCode::Invariant));
        assert_eq!(err.fix(), Some("use `America/Bogota`"));
    }
}
