// A misspelled argument gets a "did you mean".
use jobs::prelude::*;

#[task(cron = "0 9 * * 1-5", tz = "Europe/Paris", catchup = run_all)]
fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
