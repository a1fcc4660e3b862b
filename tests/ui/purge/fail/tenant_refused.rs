// A purge belongs to no tenant.
use jobs::prelude::*;
use jobs::purge::Purge;

#[purge(name = "app.purge", tenant = org)]
pub fn app_purge(_run: &Run) -> Result<Purge, JobError> {
    Ok(Purge::new().expired_events())
}

fn main() {}
