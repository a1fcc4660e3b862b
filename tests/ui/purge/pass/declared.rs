// A purge with the defaults and one with every option; the fn may be async.
use jobs::prelude::*;
use jobs::purge::Purge;
use jobs::Task;

#[purge(name = "app.purge")]
pub fn app_purge(_run: &Run) -> Result<Purge, JobError> {
    Ok(Purge::new().expired_events())
}

#[purge(name = "app.purge.nightly", cron = "15 3 * * *", tz = "Europe/Paris", task = "app.purge.night", queue = "maintenance", timeout = "10m", handle = Nightly)]
pub async fn nightly(_run: &Run) -> Result<Purge, JobError> {
    Ok(Purge::new().expired_events())
}

#[test]
fn runs() {
    assert_eq!(
        <AppPurgeSchedule as Task>::DESCRIPTOR.cron,
        jobs::purge::DEFAULT_PURGE_CRON
    );
    assert_eq!(
        <NightlySchedule as Task>::DESCRIPTOR.name,
        "app.purge.night"
    );
    assert_eq!(Nightly::descriptor().queue, "maintenance");
}
