// A step of zero never advances.
use jobs::prelude::*;

#[task(cron = "*/0 * * * *", tz = "Europe/Paris")]
fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
