// A task never runs a body: each option of one is refused at its argument.
use jobs::prelude::*;

#[task(
    cron = "0 9 * * 1-5",
    tz = "Europe/Paris",
    retry(attempts = 3),
    timeout = "10m",
    step_timeout = "30s",
    concurrency = 1,
    queue = "email",
    dead_letter = false,
    key = "digest",
    tenant = none,
)]
fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
