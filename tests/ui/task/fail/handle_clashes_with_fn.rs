// The handle would take the fn's own name.
use jobs::prelude::*;

#[task(cron = "0 9 * * 1-5", tz = "Europe/Paris", handle = weekday_digest)]
fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
