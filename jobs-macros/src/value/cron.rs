//! `cron = "0 9 * * 1-5"`: a standard 5-field cron expression (seed-inventory §12, §30 item 17).
//!
//! Five fields, minute hour day-of-month month day-of-week, read as Vixie cron reads them: no
//! seconds field, no year field, no `@hourly`-style alias. Each field is checked here for
//! shape and range, so a message can name the field; the `cron` crate then has the last word,
//! on the expression with a `0` seconds field in front and the day of week renumbered to its
//! convention (it counts Sunday as 1, standard cron as 0 or 7).

use std::collections::BTreeSet;
use std::str::FromStr;

use syn::Expr;

use super::{lit_str, shown};

/// A checked cron expression.
#[derive(Debug, Clone)]
pub struct CronValue {
    /// The five fields, separated by one space.
    pub expr: String,
}

/// One of the five fields: its name in messages, its range, and the names it accepts.
struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    /// Names for `min`, `min + 1`, ...
    names: &'static [&'static str],
}

const FIELDS: [Field; 5] = [
    Field {
        name: "minute",
        min: 0,
        max: 59,
        names: &[],
    },
    Field {
        name: "hour",
        min: 0,
        max: 23,
        names: &[],
    },
    Field {
        name: "day-of-month",
        min: 1,
        max: 31,
        names: &[],
    },
    Field {
        name: "month",
        min: 1,
        max: 12,
        names: &[
            "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
        ],
    },
    // 0 and 7 are both Sunday.
    Field {
        name: "day-of-week",
        min: 0,
        max: 7,
        names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
    },
];

/// The shape of a cron, for messages.
const SHAPE: &str = "a cron has 5 fields (minute hour day-of-month month day-of-week)";

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

/// Parses `cron = ".."`.
pub fn parse(expr: &Expr) -> syn::Result<CronValue> {
    let Some(lit) = lit_str(expr) else {
        return Err(syn::Error::new_spanned(
            expr,
            format!(
                "`cron` takes a string literal, found `{}`: write `cron = \"0 9 * * 1-5\"` \
                 (X_INVARIANT)",
                shown(expr)
            ),
        ));
    };
    let text = lit.value();
    let invalid = |why: String| {
        syn::Error::new_spanned(lit, format!("invalid cron `{text}`: {why} (X_INVARIANT)"))
    };
    let fields: Vec<&str> = text.split_whitespace().collect();
    if let Some(alias) = fields.first().filter(|f| f.starts_with('@')) {
        return Err(invalid(alias_advice(alias)));
    }
    match fields.len() {
        5 => {}
        0 => {
            return Err(syn::Error::new_spanned(
                lit,
                format!("`cron` cannot be blank: {SHAPE}, e.g. \"0 9 * * 1-5\" (X_INVARIANT)"),
            ))
        }
        6 | 7 => {
            let dropped = if fields.len() == 6 {
                "the seconds field"
            } else {
                "the seconds and year fields"
            };
            let minutes = fields[1..6].join(" ");
            let whole = if fields[0] == "0" {
                String::new()
            } else {
                " (a task fires on whole minutes)".to_owned()
            };
            return Err(invalid(format!(
                "{SHAPE}, found {}; remove {dropped}{whole}: `cron = \"{minutes}\"`",
                fields.len()
            )));
        }
        n => {
            return Err(invalid(format!(
                "{SHAPE}, found {n}; write all five, e.g. `cron = \"0 9 * * 1-5\"` for 09:00 \
                 Monday to Friday"
            )))
        }
    }

    for (field, spec) in FIELDS.iter().zip(&fields) {
        field_values(field, spec)
            .map_err(|why| invalid(format!("in the {} field, {why}", field.name)))?;
    }

    // The `cron` crate has the last word, on the expression the runtime gives it: a seconds
    // field first, and the day of week in its numbering (Sunday = 1). As in the runtime's
    // scheduler, names and `*` pass through, numbers are renumbered item by item.
    let day_of_week = fields[4]
        .split(',')
        .map(|item| {
            let base = item.split('/').next().unwrap_or(item);
            if base == "*" || base.chars().any(|c| c.is_ascii_alphabetic()) {
                return item.to_owned();
            }
            let days = field_values(&FIELDS[4], item).unwrap_or_default();
            let quartz: BTreeSet<u32> = days.iter().map(|day| day % 7 + 1).collect();
            let quartz: Vec<String> = quartz.iter().map(u32::to_string).collect();
            quartz.join(",")
        })
        .collect::<Vec<_>>()
        .join(",");
    let with_seconds = format!("0 {} {day_of_week}", fields[..4].join(" "));
    if let Err(err) = ::cron::Schedule::from_str(&with_seconds) {
        // Its message is the expression, a caret line, then the complaint.
        let complaint = err.to_string();
        let complaint = complaint
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty() && !line.trim_start().starts_with('^'))
            .filter(|line| *line != with_seconds)
            .unwrap_or("it does not parse")
            .trim()
            .to_owned();
        return Err(invalid(complaint));
    }

    Ok(CronValue {
        expr: fields.join(" "),
    })
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
fn field_values(field: &Field, spec: &str) -> Result<BTreeSet<u32>, String> {
    let mut values = BTreeSet::new();
    let range = format!("{}-{}", field.min, field.max);
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
                if step == 0 || step > field.max {
                    return Err(format!(
                        "the step `/{step}` must be between 1 and {}",
                        field.max
                    ));
                }
                (base, Some(step))
            }
            None => (item, None),
        };
        let (first, last) = if base == "*" {
            // Every day of the week is 0-6: Sunday once.
            let last = if field.name == "day-of-week" {
                6
            } else {
                field.max
            };
            (field.min, last)
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
            // `5/15` is every 15th from 5 on.
            (at, if step.is_some() { field.max } else { at })
        };
        let mut at = first;
        while at <= last {
            values.insert(if field.name == "day-of-week" {
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
fn value(field: &Field, text: &str, range: &str) -> Result<u32, String> {
    if let Ok(number) = text.parse::<u32>() {
        if number < field.min || number > field.max {
            return Err(format!("`{number}` is out of range ({range})"));
        }
        return Ok(number);
    }
    let lower = text.to_ascii_lowercase();
    if let Some(index) = field.names.iter().position(|name| *name == lower) {
        return Ok(field.min + index as u32);
    }
    if field.names.is_empty() {
        return Err(format!(
            "`{text}` is not a number; write {range}, `*`, a range `a-b`, a list `a,b` or a \
             step `*/n`"
        ));
    }
    Err(format!(
        "`{text}` is not a {}; write {range} or one of {}",
        field.name.replace("day-of-", "day of the "),
        field.names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<String, String> {
        let expr: Expr = syn::parse_str(&format!("{text:?}")).unwrap();
        parse(&expr).map(|c| c.expr).map_err(|e| e.to_string())
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
        for (text, why) in [
            (
                "0 0 9 * * *",
                "found 6; remove the seconds field: `cron = \"0 9 * * *\"`",
            ),
            ("* * * *", "found 4"),
            ("@hourly", "write `cron = \"0 * * * *\"`"),
            ("@daily", "write `cron = \"0 0 * * *\"`"),
            (
                "61 * * * *",
                "in the minute field, `61` is out of range (0-59)",
            ),
            ("* * * * mon-xyz", "`xyz` is not a day of the week"),
            ("5-1 * * * *", "runs backwards"),
            ("*/0 * * * *", "the step `/0`"),
            ("1,,2 * * * *", "an empty item"),
            ("0 9 * * mon-5", "mixes a name and a number"),
        ] {
            let err = check(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }
}
