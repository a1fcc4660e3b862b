// A purge has a durable name.
use jobs::prelude::*;
use jobs::purge::Purge;

#[purge(cron = "23 * * * *")]
pub fn app_purge(_run: &Run) -> Result<Purge, JobError> {
    Ok(Purge::new().expired_events())
}

fn main() {}
