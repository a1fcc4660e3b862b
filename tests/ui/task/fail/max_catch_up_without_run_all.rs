// `max_catch_up` bounds only `run_all`; next to the default `skip` it would do nothing.
use jobs::prelude::*;

#[task(cron = "0 9 * * 1-5", tz = "Europe/Paris", max_catch_up = 5)]
fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
