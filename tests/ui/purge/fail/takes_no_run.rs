// The targets are built from the attempt's run.
use jobs::prelude::*;
use jobs::purge::Purge;

#[purge(name = "app.purge")]
pub fn app_purge() -> Result<Purge, JobError> {
    Ok(Purge::new().expired_events())
}

fn main() {}
