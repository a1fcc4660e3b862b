// A field out of its range: there is no minute 61.
use jobs::prelude::*;

#[task(cron = "61 * * * *", tz = "Europe/Paris")]
fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
