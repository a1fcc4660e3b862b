// A negative bound.
use jobs::prelude::*;

#[task(cron = "0 9 * * 1-5", tz = "Europe/Paris", catch_up = run_all, max_catch_up = -3)]
fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
