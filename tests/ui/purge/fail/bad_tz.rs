// The zone is checked where it is written.
use jobs::prelude::*;
use jobs::purge::Purge;

#[purge(name = "app.purge", tz = "Mars/Olympus")]
pub fn app_purge(_run: &Run) -> Result<Purge, JobError> {
    Ok(Purge::new().expired_events())
}

fn main() {}
