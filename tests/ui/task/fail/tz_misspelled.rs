// A misspelled zone; the fix names the closest one.
use jobs::prelude::*;

#[task(cron = "0 9 * * 1-5", tz = "Europe/Pariss")]
fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
