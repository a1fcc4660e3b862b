// An unknown argument lists every argument `#[purge]` takes; a near miss is named.
use jobs::prelude::*;
use jobs::purge::Purge;

#[purge(name = "app.purge", crn = "15 3 * * *")]
pub fn app_purge(_run: &Run) -> Result<Purge, JobError> {
    Ok(Purge::new().expired_events())
}

fn main() {}
