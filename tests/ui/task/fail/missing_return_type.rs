// A task fn answers the jobs to enqueue.
use jobs::prelude::*;

#[task(cron = "0 9 * * 1-5", tz = "Europe/Paris")]
fn weekday_digest(_at: Occurrence) {}

fn main() {}
