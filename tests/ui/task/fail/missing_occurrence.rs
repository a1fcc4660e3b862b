// A task fn takes the occurrence it fires for.
use jobs::prelude::*;

#[task(cron = "0 9 * * 1-5", tz = "Europe/Paris")]
fn weekday_digest() -> Vec<Entry> {
    vec![]
}

fn main() {}
