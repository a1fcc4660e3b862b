// Entries are built from the occurrence alone: one parameter.
use jobs::prelude::*;

#[task(cron = "0 9 * * 1-5", tz = "Europe/Paris")]
fn weekday_digest(_at: Occurrence, _day: String) -> Vec<Entry> {
    vec![]
}

fn main() {}
