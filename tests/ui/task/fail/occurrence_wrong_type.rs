// The one parameter is the occurrence; another type is reported at it.
use jobs::prelude::*;

#[task(cron = "0 9 * * 1-5", tz = "Europe/Paris")]
fn weekday_digest(_at_ms: i64) -> Vec<Entry> {
    vec![]
}

fn main() {}
