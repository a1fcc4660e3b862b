// A cron has 5 fields: four are refused.
use jobs::prelude::*;

#[task(cron = "0 9 * *", tz = "Europe/Paris")]
fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
