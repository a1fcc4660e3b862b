// A city alone is not an IANA zone; the fix names the zone.
use jobs::prelude::*;

#[task(cron = "0 9 * * 1-5", tz = "Bogota")]
fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
