// A task only enqueues: its fn is plain, the work goes in a job.
use jobs::prelude::*;

#[task(cron = "0 9 * * 1-5", tz = "Europe/Paris")]
async fn weekday_digest(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

fn main() {}
