//! One cron grammar for the macros and the runtime (issue 14, point 4): every cron the grammar
//! accepts (the grammar `#[task]` checks literals with) is accepted by the runtime scheduler and
//! fires at exactly the instants the grammar's own matcher selects, resolved with the DST rules
//! of seed-inventory §12, around real transitions in zones that shift by an hour at 02:00
//! (New York, Paris), by half an hour (Lord Howe), at midnight (Santiago), and in zones that do
//! not shift (UTC, Kolkata).
//!
//! The expected instants are found by brute force, minute by minute over the zone's wall clock,
//! with the grammar's matcher; the runtime's are the sequence `jobs::check_schedule` answers,
//! each the next after the one before: the `cron` crate's iteration, the grammar's translation
//! for it, and the scheduler's DST resolution all stand between the two.

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;
use jobs::check_schedule;
use jobs_grammar::cron::Cron;
use proptest::prelude::*;

/// Fires compared per case.
const FIRES: usize = 64;
/// How far the brute force looks for them, in days (past a 29 February from 2030).
const HORIZON_DAYS: i64 = 800;

/// One field's bounds, its names (for `min`, `min + 1`, ...), and the largest step it takes.
struct Bounds {
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTE: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOUR: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DAY_OF_MONTH: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTH: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const DAY_OF_WEEK: Bounds = Bounds {
    min: 0,
    max: 7,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

/// A value of the field, as a number or (where it has names) sometimes a name in any case.
fn spelled(bounds: &'static Bounds, value: u32, named: bool, upper: bool) -> String {
    let index = (value - bounds.min) as usize;
    match bounds.names.get(index) {
        Some(name) if named && upper => name.to_uppercase(),
        Some(name) if named => (*name).to_owned(),
        _ => value.to_string(),
    }
}

/// One valid item of a field: `*`, `*/n`, `v`, `a-b`, `a-b/n`, `v/n`.
fn item(bounds: &'static Bounds, star_weight: u32) -> impl Strategy<Value = String> {
    let value = bounds.min..=bounds.max;
    let step = 1..=bounds.max;
    prop_oneof![
        star_weight => Just("*".to_owned()),
        1 => step.clone().prop_map(|n| format!("*/{n}")),
        3 => (value.clone(), any::<bool>(), any::<bool>())
            .prop_map(move |(v, named, upper)| spelled(bounds, v, named, upper)),
        2 => (value.clone(), value.clone(), any::<bool>(), any::<bool>()).prop_map(
            move |(a, b, named, upper)| {
                let (low, high) = (a.min(b), a.max(b));
                // A range is all names or all numbers, and 7 (Sunday again) has no name.
                let named = named && (high - bounds.min) < bounds.names.len() as u32;
                format!(
                    "{}-{}",
                    spelled(bounds, low, named, upper),
                    spelled(bounds, high, named, upper)
                )
            }
        ),
        1 => (value.clone(), value.clone(), step.clone()).prop_map(|(a, b, n)| {
            format!("{}-{}/{n}", a.min(b), a.max(b))
        }),
        1 => (value, step, any::<bool>()).prop_map(move |(v, n, named)| {
            format!("{}/{n}", spelled(bounds, v, named, false))
        }),
    ]
}

/// A field: one to three items.
fn field(bounds: &'static Bounds, star_weight: u32) -> impl Strategy<Value = String> {
    prop::collection::vec(item(bounds, star_weight), 1..=3).prop_map(|items| items.join(","))
}

/// A valid 5-field cron, its day and month fields leaning to `*` so that most fire often
/// enough to be compared.
fn cron() -> impl Strategy<Value = String> {
    (
        field(&MINUTE, 1),
        field(&HOUR, 2),
        field(&DAY_OF_MONTH, 8),
        field(&MONTH, 10),
        field(&DAY_OF_WEEK, 6),
    )
        .prop_map(|(m, h, dom, mon, dow)| format!("{m} {h} {dom} {mon} {dow}"))
}

/// The zones, the shifting ones first.
const SHIFTING: [Tz; 4] = [
    Tz::America__New_York,
    Tz::Europe__Paris,
    Tz::Australia__Lord_Howe,
    Tz::America__Santiago,
];
const STEADY: [Tz; 2] = [Tz::UTC, Tz::Asia__Kolkata];

fn offset(tz: Tz, at: DateTime<Utc>) -> i32 {
    tz.offset_from_utc_datetime(&at.naive_utc())
        .fix()
        .local_minus_utc()
}

/// The hours of 2030 at which `tz` changes its offset.
fn transitions(tz: Tz) -> Vec<DateTime<Utc>> {
    let first = Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap();
    (0..365 * 24)
        .map(|h| first + Duration::hours(h))
        .filter(|at| offset(tz, *at) != offset(tz, *at + Duration::hours(1)))
        .collect()
}

/// Where a case starts: shortly before (or after) a transition of a shifting zone, or anywhere
/// in 2030 in a steady one.
fn start() -> impl Strategy<Value = (Tz, DateTime<Utc>)> {
    let near_a_transition =
        (0..SHIFTING.len(), 0..2usize, -100i64..=20).prop_map(|(zone, which, minutes)| {
            let tz = SHIFTING[zone];
            let shifts = transitions(tz);
            assert_eq!(shifts.len(), 2, "{tz} shifts twice a year");
            (tz, shifts[which] + Duration::minutes(minutes))
        });
    let anywhere = (0..STEADY.len(), 0i64..365 * 24 * 60).prop_map(|(zone, minutes)| {
        let first = Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap();
        (STEADY[zone], first + Duration::minutes(minutes))
    });
    prop_oneof![4 => near_a_transition, 1 => anywhere]
}

/// The instants a matching wall-clock minute stands for in `tz` (seed-inventory §12): itself;
/// in a fall-back overlap its first pass, or both passes for an interval cron; in a
/// spring-forward gap the zone's next valid instant.
fn instants(tz: Tz, wall: NaiveDateTime, interval: bool) -> Vec<DateTime<Utc>> {
    match tz.from_local_datetime(&wall) {
        LocalResult::Single(at) => vec![at.with_timezone(&Utc)],
        LocalResult::Ambiguous(first, second) if interval => {
            vec![first.with_timezone(&Utc), second.with_timezone(&Utc)]
        }
        LocalResult::Ambiguous(first, _) => vec![first.with_timezone(&Utc)],
        LocalResult::None => {
            let after_the_gap = (1..=24 * 60)
                .map(|m| wall + Duration::minutes(m))
                .find_map(|w| tz.from_local_datetime(&w).earliest())
                .expect("a gap ends within a day");
            vec![after_the_gap.with_timezone(&Utc)]
        }
    }
}

/// The first `FIRES` instants after `from` the grammar selects, by brute force over the wall
/// clock (within the horizon); and the end of the horizon looked at.
fn expected(cron: &Cron, tz: Tz, from: DateTime<Utc>) -> (Vec<DateTime<Utc>>, DateTime<Utc>) {
    let first_day = from.with_timezone(&tz).date_naive() - Duration::days(1);
    // A set: the walls of a spring-forward gap all land on the instant after it, and the
    // count that ends the search must count that instant once.
    let mut found = std::collections::BTreeSet::new();
    // Walls keep being read for a day past the FIRES-th instant: a fall-back overlap can put
    // a later wall minute at an earlier instant, never by more than a few hours.
    let mut until = None;
    let mut horizon = from + Duration::days(HORIZON_DAYS);
    for day in first_day.iter_days().take(HORIZON_DAYS as usize + 2) {
        if until.is_some_and(|until| day > until) {
            break;
        }
        if !cron.matches_date(day) {
            continue;
        }
        for minute in 0..24 * 60 {
            let wall = day.and_hms_opt(minute / 60, minute % 60, 0).unwrap();
            if !cron.matches(wall) {
                continue;
            }
            found.extend(
                instants(tz, wall, cron.is_interval())
                    .into_iter()
                    .filter(|at| *at > from),
            );
        }
        if until.is_none() && found.len() >= FIRES {
            until = Some(day + Duration::days(1));
        }
    }
    let mut found: Vec<DateTime<Utc>> = found.into_iter().collect();
    if found.len() >= FIRES {
        found.truncate(FIRES);
        horizon = *found.last().unwrap();
    } else {
        found.retain(|at| *at <= horizon);
    }
    (found, horizon)
}

/// The runtime's fires after `from`, each the next after the one before, up to `until` or
/// `count` of them.
fn fired(
    text: &str,
    tz: Tz,
    from: DateTime<Utc>,
    count: usize,
    until: DateTime<Utc>,
) -> Vec<DateTime<Utc>> {
    let mut fires = Vec::new();
    let mut at = from;
    while fires.len() < count {
        match check_schedule(text, tz.name(), at) {
            Ok(Some(next)) if next <= until => {
                fires.push(next);
                at = next;
            }
            Ok(_) => break,
            Err(e) => panic!("the runtime refused `{text}`, which the grammar accepts: {e}"),
        }
    }
    fires
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_accepted_cron_fires_at_run_time_where_the_grammar_says(
        text in cron(),
        (tz, from) in start(),
    ) {
        let cron = Cron::parse(&text).unwrap_or_else(|e| panic!("`{text}` was generated valid: {e}"));
        let (want, until) = expected(&cron, tz, from);
        let got = fired(&text, tz, from, FIRES, until);
        prop_assert_eq!(&got, &want, "`{}` in {} from {}", text, tz, from);
    }

    /// Near-cron text: the runtime refuses exactly what the grammar refuses.
    #[test]
    fn the_runtime_accepts_exactly_what_the_grammar_accepts(
        fields in prop::collection::vec("[0-9*/,a-zA-Z@-]{1,6}", 0..8),
    ) {
        let text = fields.join(" ");
        let now = Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap();
        let runtime = check_schedule(&text, "UTC", now);
        match Cron::parse(&text) {
            Ok(_) => prop_assert!(runtime.is_ok(), "`{}`: {:?}", text, runtime),
            Err(grammar) => {
                let error = runtime.unwrap_err();
                prop_assert_eq!(error.code(), Some(jobs::ErrorCode::Invariant));
                prop_assert!(error.message().contains(&grammar.to_string()), "{}", error);
            }
        }
    }
}

/// The disagreement issue 14 found, settled: `5/2` in the day-of-week field is Friday and
/// Sunday (5-7/2, 7 being Sunday) for the grammar and at run time alike.
#[test]
fn five_step_two_fires_on_fridays_and_sundays() {
    let from = Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap(); // a Tuesday
    let until = from + Duration::days(14);
    let fires: Vec<String> = fired("0 9 * * 5/2", Tz::UTC, from, 4, until)
        .iter()
        .map(|at| at.format("%a %F").to_string())
        .collect();
    assert_eq!(
        fires,
        [
            "Fri 2030-01-04",
            "Sun 2030-01-06",
            "Fri 2030-01-11",
            "Sun 2030-01-13"
        ]
    );
    let (want, _) = expected(&Cron::parse("0 9 * * 5/2").unwrap(), Tz::UTC, from);
    assert_eq!(
        want[..4]
            .iter()
            .map(|at| at.format("%a %F").to_string())
            .collect::<Vec<_>>(),
        fires
    );
}

/// Found by the property above: a spring-forward gap's walls all land on one instant, which the
/// brute force once counted as many and so stopped a day short of the runtime's next fire.
#[test]
fn a_spring_forward_gap_counts_its_instant_once() {
    let text = "0-27,*/9 2-14/5 * * 0/2";
    let tz: Tz = "America/New_York".parse().expect("zone");
    let from = Utc.with_ymd_and_hms(2030, 3, 10, 6, 0, 0).unwrap();
    let cron = Cron::parse(text).expect("valid");
    let (want, until) = expected(&cron, tz, from);
    assert_eq!(want.len(), FIRES);
    assert_eq!(fired(text, tz, from, FIRES, until), want);
}
