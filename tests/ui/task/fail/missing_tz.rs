// A cron means nothing without its zone.
use jobs::prelude::*;

#[task(cron = "0 9 * * 1-5")]
fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
