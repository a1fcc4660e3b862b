// The schedule is checked where it is written.
use jobs::prelude::*;
use jobs::purge::Purge;

#[purge(name = "app.purge", cron = "61 * * * *")]
pub fn app_purge(_run: &Run) -> Result<Purge, JobError> {
    Ok(Purge::new().expired_events())
}

fn main() {}
