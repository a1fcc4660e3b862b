// A catch-up policy that does not exist.
use jobs::prelude::*;

#[task(cron = "0 9 * * 1-5", tz = "Europe/Paris", catch_up = later)]
fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
