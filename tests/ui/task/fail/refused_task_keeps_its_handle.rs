// A refused #[task] still emits its handle: call sites add no errors of their own.
use jobs::prelude::*;

#[task(cron = "0 9 * * *", tz = "Bogota")]
fn daily(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

pub async fn by_hand(jobs: &Jobs) -> Result<(), JobError> {
    Daily::enqueue(jobs).await?;
    let _next = Daily::next_run(jobs.now());
    Ok(())
}

fn main() {}
