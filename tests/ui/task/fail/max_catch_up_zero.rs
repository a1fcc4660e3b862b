// A bound of 0 would never catch up.
use jobs::prelude::*;

#[task(cron = "0 9 * * 1-5", tz = "Europe/Paris", catch_up = run_all, max_catch_up = 0)]
fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
