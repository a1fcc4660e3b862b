// An `@daily`-style alias is refused, with the 5-field cron it stands for.
use jobs::prelude::*;

#[task(cron = "@daily", tz = "Europe/Paris")]
fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
