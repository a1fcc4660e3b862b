// A day of the week that does not exist.
use jobs::prelude::*;

#[task(cron = "* * * * mon-xyz", tz = "Europe/Paris")]
fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
