//! A cron expression in words, for the tasks page: the common shapes read as a sentence, any
//! other expression is shown as it is written.

/// `0 9 * * 1-5` -> `at 09:00, Monday to Friday`.
pub(crate) fn describe(cron: &str) -> String {
    let fields: Vec<&str> = cron.split_whitespace().collect();
    let [minute, hour, day, month, weekday] = fields[..] else {
        return format!("cron `{cron}`");
    };
    let number = |s: &str| s.parse::<u32>().ok();
    let when = match (minute, hour) {
        ("*", "*") => "every minute".to_string(),
        (m, "*") if m.starts_with("*/") => format!("every {} minutes", &m[2..]),
        (m, "*") if number(m).is_some() => format!("every hour at minute {m}"),
        (m, h) if number(m).is_some() && number(h).is_some() => {
            format!(
                "at {:02}:{:02}",
                number(h).unwrap_or(0),
                number(m).unwrap_or(0)
            )
        }
        _ => return format!("cron `{cron}`"),
    };
    let days = match (day, month, weekday) {
        ("*", "*", "*") => String::new(),
        ("*", "*", w) => match weekdays(w) {
            Some(words) => format!(", {words}"),
            None => return format!("cron `{cron}`"),
        },
        (d, "*", "*") if number(d).is_some() => format!(", on day {d} of the month"),
        _ => return format!("cron `{cron}`"),
    };
    if when == "every minute" && days.is_empty() {
        return when;
    }
    format!("{when}{days}")
}

const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

fn day(field: &str) -> Option<&'static str> {
    let n: usize = field.parse().ok()?;
    DAYS.get(n % 7).copied()
}

fn weekdays(field: &str) -> Option<String> {
    if let Some((from, to)) = field.split_once('-') {
        return Some(format!("{} to {}", day(from)?, day(to)?));
    }
    let names: Option<Vec<&str>> = field.split(',').map(day).collect();
    Some(format!("on {}", names?.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn common_shapes_read_as_words() {
        assert_eq!(describe("* * * * *"), "every minute");
        assert_eq!(describe("*/5 * * * *"), "every 5 minutes");
        assert_eq!(describe("15 * * * *"), "every hour at minute 15");
        assert_eq!(describe("0 9 * * 1-5"), "at 09:00, Monday to Friday");
        assert_eq!(describe("30 2 * * 0,6"), "at 02:30, on Sunday, Saturday");
        assert_eq!(describe("0 3 1 * *"), "at 03:00, on day 1 of the month");
        assert_eq!(describe("0 0 1 1 *"), "cron `0 0 1 1 *`");
    }
}
