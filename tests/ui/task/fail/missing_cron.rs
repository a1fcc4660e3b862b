// A task without a schedule.
use jobs::prelude::*;

#[task(tz = "Europe/Paris")]
fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
