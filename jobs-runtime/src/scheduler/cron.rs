//! A task's schedule: a standard 5-field cron read in an IANA zone, resolved to instants with
//! the reference's DST rules.
//!
//! - Spring-forward gap: a local time the zone skips fires at the zone's next valid instant (the
//!   end of the gap), once.
//! - Fall-back overlap: a fixed-time cron (its minute and hour fields are neither `*` nor `*/n`,
//!   e.g. `30 1 * * *`) fires ONCE, on the first pass; an interval cron (`*/5 * * * *`,
//!   `0 * * * *`) fires in both passes.
//!
//! The cron is evaluated on the zone's wall-clock timeline (the `cron` crate, given a `0 `
//! seconds field and a standard day-of-week field: 0 or 7 is Sunday); each wall-clock candidate
//! is then mapped to the instants it stands for.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{Duration, LocalResult, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;

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
        let fields: Vec<&str> = expr.split_whitespace().collect();
        let refuse = |why: String| {
            Err(JobError::new(
                ErrorCode::Invariant,
                format!("the cron `{expr}` of task `{task}` {why}"),
            )
            .with_fix("write a standard 5-field cron: minute hour day-of-month month day-of-week, e.g. `30 9 * * 1-5`"))
        };
        if fields.len() != 5 {
            return refuse(format!("has {} fields, not 5", fields.len()));
        }
        let dow = match day_of_week(fields[4]) {
            Some(dow) => dow,
            None => {
                return refuse(format!(
                    "has a day-of-week `{}` that does not parse",
                    fields[4]
                ))
            }
        };
        let six = |dom: &str, dow: &str| {
            format!("0 {} {} {dom} {} {dow}", fields[0], fields[1], fields[3])
        };
        let restricted = |f: &str| !f.starts_with('*');
        let texts = if restricted(fields[2]) && restricted(fields[4]) {
            vec![six(fields[2], "*"), six("*", &dow)]
        } else {
            vec![six(fields[2], &dow)]
        };
        let mut schedules = Vec::with_capacity(texts.len());
        for text in texts {
            match cron::Schedule::from_str(&text) {
                Ok(schedule) => schedules.push(schedule),
                Err(e) => return refuse(format!("does not parse: {e}")),
            }
        }
        let is_interval = |f: &str| f == "*" || f.starts_with("*/");
        Ok(Cron {
            schedules,
            tz,
            interval: is_interval(fields[0]) || is_interval(fields[1]),
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

/// A standard day-of-week field (0-7, 0 and 7 Sunday) in the `cron` crate's numbering (1-7,
/// 1 Sunday). Names and `*`, `*/n` pass through; numbers, ranges and steps are expanded.
fn day_of_week(field: &str) -> Option<String> {
    let mut out = Vec::new();
    for item in field.split(',') {
        let (base, step) = match item.split_once('/') {
            Some((base, step)) => (base, Some(step.parse::<u32>().ok().filter(|s| *s > 0)?)),
            None => (item, None),
        };
        if base == "*" || base.chars().any(|c| c.is_ascii_alphabetic()) {
            out.push(item.to_string());
            continue;
        }
        let (from, to) = match base.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => {
                let a = base.parse::<u32>().ok()?;
                (a, if step.is_some() { 6 } else { a })
            }
        };
        if from > 7 || to > 7 || from > to {
            return None;
        }
        let mut day = from;
        while day <= to {
            out.push(((day % 7) + 1).to_string());
            day += step.unwrap_or(1);
        }
    }
    Some(out.join(","))
}

/// An IANA zone, or `X_INVARIANT` naming the zone that was probably meant (`Bogota` ->
/// `America/Bogota`).
pub(crate) fn parse_tz(task: &str, tz: &str) -> Result<Tz, JobError> {
    if let Ok(zone) = tz.parse::<Tz>() {
        return Ok(zone);
    }
    let wanted = tz.trim().replace(' ', "_").to_ascii_lowercase();
    let suggestion = chrono_tz::TZ_VARIANTS
        .iter()
        .map(|z| z.name())
        .find(|name| {
            name.to_ascii_lowercase() == wanted
                || name
                    .rsplit('/')
                    .next()
                    .is_some_and(|last| last.to_ascii_lowercase() == wanted)
        });
    let error = JobError::new(
        ErrorCode::Invariant,
        format!("the tz `{tz}` of task `{task}` is not an IANA time zone"),
    );
    Err(match suggestion {
        Some(name) => error.with_fix(format!("use `{name}`")),
        None => error.with_fix("use an IANA zone name such as `Europe/Paris` or `America/Bogota`"),
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
        assert!(err.is(ErrorCode::Invariant) && err.message().contains("4 fields"));
        assert!(Cron::parse("t", "61 * * * *", "UTC").is_err());
        assert!(Cron::parse("t", "* * * * 9", "UTC").is_err());
        let err = Cron::parse("t", "* * * * *", "Bogota").unwrap_err();
        assert!(err.is(ErrorCode::Invariant));
        assert_eq!(err.fix(), Some("use `America/Bogota`"));
    }
}
