// A cron has 5 fields: a leading seconds field is refused, with the 5 fields to keep.
use jobs::prelude::*;

#[task(cron = "0 0 9 * * *", tz = "Europe/Paris")]
fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
