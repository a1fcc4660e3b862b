//! The cron dialect of `#[task(cron = "..")]` and `jobs::check_schedule` (seed-inventory §12,
//! §30 item 17): a standard 5-field expression, minute hour day-of-month month day-of-week, read
//! as Vixie cron reads it. No seconds field, no year field, no `@hourly`-style alias.
//!
//! Each field is a comma list of items; an item is `*`, a value, a range `a-b`, or any of those
//! with a step `/n`. Months and days of the week may be named (`jan`, `mon`, any case). The day
//! of the week counts Sunday as 0 and again as 7. A step after a single value runs to the end
//! of the field, as in the BSD line of Vixie cron (its `get_range` reads `n/s` as
//! `n-<last>/s`): `5/15` in the minute field is 5, 20, 35, 50, and `5/2` in the day-of-week
//! field is 5 and 7, Friday and Sunday.
//!
//! A minute matches when its minute, hour and month are selected and its day is: when both day
//! fields are restricted (neither starts with `*`), a day matching EITHER of them; otherwise a
//! day matching both (a `*` field matches every day, `*/2` only its own days).
//!
//! [`Cron::quartz_expressions`] translates a cron for the `cron` crate, the evaluator the
//! runtime iterates with; the translation spells out every selected value, so the two cannot
//! read a field differently.

use std::fmt;

use chrono::{Datelike, NaiveDate, NaiveDateTime, Timelike};

/// The shape of a cron, for messages.
pub const SHAPE: &str = "a cron has 5 fields (minute hour day-of-month month day-of-week)";

/// A checked cron expression: its five fields and the minutes they select.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    text: String,
    minutes: Values,
    hours: Values,
    days_of_month: Values,
    months: Values,
    /// Sunday is 0 (a 7 written is kept as 0).
    days_of_week: Values,
    day_of_month_star: bool,
    day_of_week_star: bool,
    interval: bool,
}

/// One of the five fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// 0-59.
    Minute,
    /// 0-23.
    Hour,
    /// 1-31.
    DayOfMonth,
    /// 1-12, or `jan`-`dec`.
    Month,
    /// 0-7 (0 and 7 are Sunday), or `sun`-`sat`.
    DayOfWeek,
}

impl Field {
    /// The five fields, in their order in a cron.
    pub const ALL: [Field; 5] = [
        Field::Minute,
        Field::Hour,
        Field::DayOfMonth,
        Field::Month,
        Field::DayOfWeek,
    ];

    /// Its name in messages: `minute`, `day-of-week`, ...
    pub fn name(self) -> &'static str {
        match self {
            Field::Minute => "minute",
            Field::Hour => "hour",
            Field::DayOfMonth => "day-of-month",
            Field::Month => "month",
            Field::DayOfWeek => "day-of-week",
        }
    }

    fn min(self) -> u32 {
        match self {
            Field::DayOfMonth | Field::Month => 1,
            _ => 0,
        }
    }

    fn max(self) -> u32 {
        match self {
            Field::Minute => 59,
            Field::Hour => 23,
            Field::DayOfMonth => 31,
            Field::Month => 12,
            Field::DayOfWeek => 7,
        }
    }

    /// Names for `min`, `min + 1`, ...
    fn names(self) -> &'static [&'static str] {
        match self {
            Field::Month => &[
                "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
            ],
            Field::DayOfWeek => &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
            _ => &[],
        }
    }

    /// The last value `*` stands for: every day of the week is 0-6, Sunday once.
    fn last_of_star(self) -> u32 {
        match self {
            Field::DayOfWeek => 6,
            field => field.max(),
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The values one field selects: bit `n` is value `n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Values(u64);

impl Values {
    fn insert(&mut self, value: u32) {
        self.0 |= 1 << value;
    }

    fn contains(self, value: u32) -> bool {
        value < 64 && self.0 & (1 << value) != 0
    }

    fn iter(self) -> impl Iterator<Item = u32> {
        (0..64).filter(move |v| self.contains(*v))
    }

    /// Every value from `min` to `last`.
    fn is_full(self, min: u32, last: u32) -> bool {
        (min..=last).all(|v| self.contains(v))
    }
}

/// Why a text is not a cron; its `Display` says why and what to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronError {
    kind: CronErrorKind,
    why: String,
}

/// Which rule a refused cron broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CronErrorKind {
    /// The text is empty or blank.
    Blank,
    /// An `@` alias (`@daily`) instead of the five fields.
    Alias,
    /// Not five fields: how many there are.
    FieldCount(usize),
    /// One field does not read.
    Field(Field),
}

impl CronError {
    fn new(kind: CronErrorKind, why: String) -> Self {
        CronError { kind, why }
    }

    /// Which rule was broken.
    pub fn kind(&self) -> CronErrorKind {
        self.kind
    }
}

impl fmt::Display for CronError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.why)
    }
}

impl std::error::Error for CronError {}

/// The `@` aliases people reach for, and what to write instead.
const ALIASES: &[(&str, &str)] = &[
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
];

impl Cron {
    /// Reads a cron; blanks around and between the fields are free.
    ///
    /// ```
    /// use jobs_grammar::cron::{Cron, CronErrorKind};
    ///
    /// assert_eq!(Cron::parse(" 0  9 * * 1-5").unwrap().as_str(), "0 9 * * 1-5");
    /// let six = Cron::parse("0 0 9 * * *").unwrap_err();
    /// assert_eq!(six.kind(), CronErrorKind::FieldCount(6));
    /// assert!(six.to_string().ends_with("remove the seconds field: `cron = \"0 9 * * *\"`"));
    /// ```
    pub fn parse(text: &str) -> Result<Cron, CronError> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        if let Some(alias) = fields.first().filter(|f| f.starts_with('@')) {
            return Err(CronError::new(CronErrorKind::Alias, alias_advice(alias)));
        }
        match fields.len() {
            5 => {}
            0 => {
                return Err(CronError::new(
                    CronErrorKind::Blank,
                    format!("it is blank; {SHAPE}, e.g. \"0 9 * * 1-5\""),
                ))
            }
            n @ (6 | 7) => {
                let dropped = if n == 6 {
                    "the seconds field"
                } else {
                    "the seconds and year fields"
                };
                let minutes = fields[1..6].join(" ");
                let whole = if fields[0] == "0" {
                    ""
                } else {
                    " (a task fires on whole minutes)"
                };
                return Err(CronError::new(
                    CronErrorKind::FieldCount(n),
                    format!("{SHAPE}, found {n}; remove {dropped}{whole}: `cron = \"{minutes}\"`"),
                ));
            }
            n => {
                return Err(CronError::new(
                    CronErrorKind::FieldCount(n),
                    format!(
                        "{SHAPE}, found {n}; write all five, e.g. `cron = \"0 9 * * 1-5\"` for \
                         09:00 Monday to Friday"
                    ),
                ))
            }
        }

        let mut values = [Values::default(); 5];
        for ((field, spec), slot) in Field::ALL.iter().zip(&fields).zip(&mut values) {
            *slot = field_values(*field, spec).map_err(|why| {
                CronError::new(
                    CronErrorKind::Field(*field),
                    format!("in the {field} field, {why}"),
                )
            })?;
        }
        let [minutes, hours, days_of_month, months, days_of_week] = values;
        let star = |spec: &str| spec.starts_with('*');
        let interval = |spec: &str| spec == "*" || spec.starts_with("*/");
        Ok(Cron {
            text: fields.join(" "),
            minutes,
            hours,
            days_of_month,
            months,
            days_of_week,
            day_of_month_star: star(fields[2]),
            day_of_week_star: star(fields[4]),
            interval: interval(fields[0]) || interval(fields[1]),
        })
    }

    /// The five fields as written, separated by one space.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether its minute or hour field is `*` or `*/n`: an interval cron, which runs through
    /// both passes of a fall-back overlap, where a fixed-time cron (`30 1 * * *`) fires once
    /// (seed-inventory §12, DST).
    pub fn is_interval(&self) -> bool {
        self.interval
    }

    /// Whether it selects the wall-clock minute `wall` falls in (its seconds are not looked at).
    pub fn matches(&self, wall: NaiveDateTime) -> bool {
        self.minutes.contains(wall.minute())
            && self.hours.contains(wall.hour())
            && self.matches_date(wall.date())
    }

    /// Whether it selects some minute of the day `date`.
    pub fn matches_date(&self, date: NaiveDate) -> bool {
        if !self.months.contains(date.month()) {
            return false;
        }
        let by_month = self.days_of_month.contains(date.day());
        let by_week = self
            .days_of_week
            .contains(date.weekday().num_days_from_sunday());
        if self.day_of_month_star || self.day_of_week_star {
            by_month && by_week
        } else {
            by_month || by_week
        }
    }

    /// The cron for the `cron` crate, the evaluator the runtime iterates with: a `0` seconds
    /// field first, every selected value spelled out (`*` for a whole field), the day of week
    /// in its numbering (1-7, Sunday 1). That crate asks for both day fields at once, so a cron
    /// whose day fields are both restricted (either may match) is two expressions, one per day
    /// field; the minutes it selects are the union of theirs.
    ///
    /// ```
    /// use jobs_grammar::cron::Cron;
    ///
    /// let cron = Cron::parse("*/20 9 * * fri/2").unwrap();
    /// assert_eq!(cron.quartz_expressions(), ["0 0,20,40 9 * * 1,6"]);
    /// let either = Cron::parse("0 12 13 * 5").unwrap();
    /// assert_eq!(either.quartz_expressions(), ["0 0 12 13 * *", "0 0 12 * * 6"]);
    /// ```
    pub fn quartz_expressions(&self) -> Vec<String> {
        let list = |values: Values, field: Field| {
            if values.is_full(field.min(), field.last_of_star()) {
                return "*".to_owned();
            }
            let spelled: Vec<String> = values.iter().map(|v| v.to_string()).collect();
            spelled.join(",")
        };
        let days_of_week = if self.days_of_week.is_full(0, 6) {
            "*".to_owned()
        } else {
            let quartz: Vec<String> = self
                .days_of_week
                .iter()
                .map(|d| (d + 1).to_string())
                .collect();
            quartz.join(",")
        };
        let head = format!(
            "0 {} {}",
            list(self.minutes, Field::Minute),
            list(self.hours, Field::Hour)
        );
        let months = list(self.months, Field::Month);
        let days_of_month = list(self.days_of_month, Field::DayOfMonth);
        if self.day_of_month_star || self.day_of_week_star {
            vec![format!("{head} {days_of_month} {months} {days_of_week}")]
        } else {
            vec![
                format!("{head} {days_of_month} {months} *"),
                format!("{head} * {months} {days_of_week}"),
            ]
        }
    }
}

impl fmt::Display for Cron {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// What to write instead of an `@` alias.
fn alias_advice(alias: &str) -> String {
    let lower = alias.to_ascii_lowercase();
    if let Some((_, instead)) = ALIASES.iter().find(|(name, _)| *name == lower) {
        return format!("{SHAPE}; `{alias}` is an alias, write `cron = \"{instead}\"` instead");
    }
    if lower == "@reboot" {
        return format!(
            "a task fires on a schedule, not when a process starts; {SHAPE}, e.g. \
             \"0 9 * * 1-5\""
        );
    }
    format!("{SHAPE}; aliases such as `{alias}` are not read, write the five fields")
}

/// The values `spec` selects in `field` (`1-5`, `*/15`, `mon,wed`), or why it does not read.
fn field_values(field: Field, spec: &str) -> Result<Values, String> {
    let mut values = Values::default();
    let range = format!("{}-{}", field.min(), field.max());
    for item in spec.split(',') {
        if item.is_empty() {
            return Err(
                "a list has an empty item; separate values with one comma, e.g. `1,15`".to_owned(),
            );
        }
        let (base, step) = match item.split_once('/') {
            Some((base, step)) => {
                let step: u32 = step.parse().map_err(|_| {
                    format!("the step `/{step}` is not a whole number, e.g. `*/15`")
                })?;
                if step == 0 || step > field.max() {
                    return Err(format!(
                        "the step `/{step}` must be between 1 and {}",
                        field.max()
                    ));
                }
                (base, Some(step))
            }
            None => (item, None),
        };
        let (first, last) = if base == "*" {
            (field.min(), field.last_of_star())
        } else if let Some((from_text, to_text)) = base.split_once('-') {
            let from = value(field, from_text, &range)?;
            let to = value(field, to_text, &range)?;
            let named = |text: &str| text.parse::<u32>().is_err();
            if named(from_text) != named(to_text) {
                return Err(format!(
                    "the range `{base}` mixes a name and a number; write both as names or both \
                     as numbers"
                ));
            }
            if from > to {
                return Err(format!(
                    "the range `{base}` runs backwards; a range goes from low to high"
                ));
            }
            (from, to)
        } else {
            let at = value(field, base, &range)?;
            // `5/15` is every 15th from 5 to the end of the field.
            (at, if step.is_some() { field.max() } else { at })
        };
        let mut at = first;
        while at <= last {
            // 7 is Sunday again.
            values.insert(if field == Field::DayOfWeek {
                at % 7
            } else {
                at
            });
            at += step.unwrap_or(1);
        }
    }
    Ok(values)
}

/// One value of `field`: a number in its range, or one of its names (`mon`, `jan`).
fn value(field: Field, text: &str, range: &str) -> Result<u32, String> {
    if let Ok(number) = text.parse::<u32>() {
        if number < field.min() || number > field.max() {
            return Err(format!("`{number}` is out of range ({range})"));
        }
        return Ok(number);
    }
    let lower = text.to_ascii_lowercase();
    if let Some(index) = field.names().iter().position(|name| *name == lower) {
        return Ok(field.min() + index as u32);
    }
    if field.names().is_empty() {
        return Err(format!(
            "`{text}` is not a number; write {range}, `*`, a range `a-b`, a list `a,b` or a \
             step `*/n`"
        ));
    }
    Err(format!(
        "`{text}` is not a {}; write {range} or one of {}",
        field.name().replace("day-of-", "day of the "),
        field.names().join(", ")
    ))
}

#[cfg(test)]
mod tests;
