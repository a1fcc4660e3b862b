use std::str::FromStr;

use chrono::{Duration, NaiveDate, NaiveDateTime};

use super::*;

fn check(text: &str) -> Result<String, String> {
    Cron::parse(text)
        .map(|c| c.as_str().to_owned())
        .map_err(|e| e.to_string())
}

fn at(text: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M").unwrap()
}

/// The weekdays (0 = Sunday) of the days a cron selects in the week of 2030-01-06 (a Sunday),
/// every day of the month being selected.
fn weekdays(day_of_week: &str) -> Vec<u32> {
    let cron = Cron::parse(&format!("0 0 * * {day_of_week}")).unwrap();
    let sunday = NaiveDate::from_ymd_opt(2030, 1, 6).unwrap();
    (0..7)
        .filter(|d| cron.matches_date(sunday + Duration::days(i64::from(*d))))
        .collect()
}

#[test]
fn standard_crons_are_read() {
    for text in [
        "0 9 * * 1-5",
        "30 1 * * *",
        "*/5 * * * *",
        "0 0 * * 0",
        "0 0 * * 7",
        "0 0 * * 5-7",
        "0 0 * * 1-5,sat",
        "0 0 * * */2",
        "0 12 1,15 jan-jun mon-fri",
        "5/15 * * * *",
        "0 0 29 2 *",
    ] {
        assert_eq!(check(text).as_deref(), Ok(text), "{text}");
    }
    assert_eq!(check("  0   9 * *  1-5 ").as_deref(), Ok("0 9 * * 1-5"));
}

#[test]
fn bad_crons_say_why() {
    for (text, kind, why) in [
        (
            "0 0 9 * * *",
            CronErrorKind::FieldCount(6),
            "found 6; remove the seconds field: `cron = \"0 9 * * *\"`",
        ),
        (
            "5 0 9 * * * 2030",
            CronErrorKind::FieldCount(7),
            "remove the seconds and year fields (a task fires on whole minutes)",
        ),
        ("* * * *", CronErrorKind::FieldCount(4), "found 4"),
        ("   ", CronErrorKind::Blank, "it is blank"),
        (
            "@hourly",
            CronErrorKind::Alias,
            "write `cron = \"0 * * * *\"`",
        ),
        (
            "@daily",
            CronErrorKind::Alias,
            "write `cron = \"0 0 * * *\"`",
        ),
        ("@reboot", CronErrorKind::Alias, "not when a process starts"),
        ("@often", CronErrorKind::Alias, "aliases such as `@often`"),
        (
            "61 * * * *",
            CronErrorKind::Field(Field::Minute),
            "in the minute field, `61` is out of range (0-59)",
        ),
        (
            "* * * * mon-xyz",
            CronErrorKind::Field(Field::DayOfWeek),
            "`xyz` is not a day of the week",
        ),
        (
            "5-1 * * * *",
            CronErrorKind::Field(Field::Minute),
            "runs backwards",
        ),
        (
            "*/0 * * * *",
            CronErrorKind::Field(Field::Minute),
            "the step `/0`",
        ),
        (
            "* * * * */8",
            CronErrorKind::Field(Field::DayOfWeek),
            "must be between 1 and 7",
        ),
        (
            "1,,2 * * * *",
            CronErrorKind::Field(Field::Minute),
            "an empty item",
        ),
        (
            "0 9 * * mon-5",
            CronErrorKind::Field(Field::DayOfWeek),
            "mixes a name and a number",
        ),
        (
            "0 9 * * 9",
            CronErrorKind::Field(Field::DayOfWeek),
            "`9` is out of range (0-7)",
        ),
        (
            "0 x * * *",
            CronErrorKind::Field(Field::Hour),
            "`x` is not a number",
        ),
    ] {
        let err = Cron::parse(text).unwrap_err();
        assert_eq!(err.kind(), kind, "{text}");
        assert!(err.to_string().contains(why), "{text}: {err}");
    }
}

#[test]
fn a_step_after_one_day_runs_to_the_end_of_the_week_sunday_included() {
    // 5/2 is 5-7/2: Friday and Sunday, as BSD Vixie cron reads it (7 is Sunday again).
    assert_eq!(weekdays("5/2"), [0, 5]);
    assert_eq!(weekdays("fri/2"), [0, 5]);
    assert_eq!(weekdays("5-7/2"), [0, 5]);
    assert_eq!(weekdays("1/2"), [0, 1, 3, 5]);
    assert_eq!(weekdays("6/2"), [6]);
    assert_eq!(weekdays("sun/3"), [0, 3, 6]);
    assert_eq!(weekdays("*/2"), [0, 2, 4, 6]);
    assert_eq!(weekdays("*/7"), [0]);
    assert_eq!(weekdays("7"), [0]);
    assert_eq!(weekdays("0-7"), [0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(weekdays("mon-fri"), [1, 2, 3, 4, 5]);
    assert_eq!(weekdays("MON,Wed"), [1, 3]);
}

#[test]
fn the_matcher_reads_minutes_hours_and_months() {
    let cron = Cron::parse("5/15 9-10 * jan-mar *").unwrap();
    assert!(cron.matches(at("2030-01-01 09:05")));
    assert!(cron.matches(at("2030-03-31 10:50")));
    assert!(!cron.matches(at("2030-01-01 09:06")));
    assert!(!cron.matches(at("2030-01-01 11:05")));
    assert!(!cron.matches(at("2030-04-01 09:05")));
}

#[test]
fn both_day_fields_restricted_match_either_else_both() {
    // 2030-09-13 is a Friday; 2030-09-06 a Friday; 2030-09-14 a Saturday.
    let either = Cron::parse("0 12 13 * 5").unwrap();
    assert!(either.matches(at("2030-09-06 12:00")));
    assert!(either.matches(at("2030-09-13 12:00")));
    assert!(!either.matches(at("2030-09-14 12:00")));
    // A `*/n` day field counts as `*`: both must match.
    let both = Cron::parse("0 12 13 * */2").unwrap();
    assert!(!both.matches(at("2030-09-13 12:00")));
    assert!(both.matches(at("2030-10-13 12:00")), "a Sunday the 13th");
    let week_only = Cron::parse("0 12 * * 5").unwrap();
    assert!(week_only.matches(at("2030-09-06 12:00")));
    assert!(!week_only.matches(at("2030-09-07 12:00")));
}

#[test]
fn interval_crons_are_those_with_a_star_minute_or_hour() {
    for (text, interval) in [
        ("*/5 * * * *", true),
        ("0 * * * *", true),
        ("* 3 * * *", true),
        ("0 */2 * * *", true),
        ("30 1 * * *", false),
        ("0-59 1 * * *", false),
        ("5/15 1 * * *", false),
    ] {
        assert_eq!(Cron::parse(text).unwrap().is_interval(), interval, "{text}");
    }
}

#[test]
fn the_translation_is_read_by_the_cron_crate_and_selects_the_same_minutes() {
    for text in [
        "0 9 * * 1-5",
        "*/5 * * * *",
        "0 0 * * 5/2",
        "0 0 * * 7",
        "15 10 1,15 jan-jun mon-fri",
        "0 12 13 * 5",
        "0 12 * * */2",
        "0 0 29 2 *",
        "59 23 31 12 sat",
    ] {
        let cron = Cron::parse(text).unwrap();
        let schedules: Vec<::cron::Schedule> = cron
            .quartz_expressions()
            .iter()
            .map(|q| ::cron::Schedule::from_str(q).unwrap_or_else(|e| panic!("{q}: {e}")))
            .collect();
        // Every minute of two fortnights: over 29 February 2028 into March, and over the turn
        // of that year.
        for (from, to) in [
            ("2028-02-24 00:00", "2028-03-09 00:00"),
            ("2028-12-25 00:00", "2029-01-08 00:00"),
        ] {
            let mut minute = at(from);
            while minute < at(to) {
                let utc = minute.and_utc();
                let by_crate = schedules.iter().any(|s| s.includes(utc));
                assert_eq!(cron.matches(minute), by_crate, "{text} at {minute}");
                minute += Duration::minutes(1);
            }
        }
    }
}
