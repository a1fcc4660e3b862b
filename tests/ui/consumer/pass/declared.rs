// A consumer with the defaults and one with every option.
use jobs::consumer::ConsumerLap;
use jobs::prelude::*;
use jobs::Task;

#[derive(Debug, Clone)]
pub struct Event {
    pub id: i64,
}

pub async fn events_after(
    _pass: Pass,
    after: Option<i64>,
    _limit: u32,
) -> Result<Page<Event, i64>, JobError> {
    let _ = after;
    Ok(Page::end())
}

#[consumer(name = "events.feed", source = events_after)]
pub async fn feed(_pass: Pass, _events: Vec<Event>) -> Result<(), JobError> {
    Ok(())
}

#[consumer(name = "events.copy", source = events_after, batch = 500, lap = 20, poll = "200ms", cron = "*/5 * * * *", tz = "Europe/Paris", queue = "consumers", timeout = "10m", handle = CopyConsumer)]
pub async fn copy(_pass: Pass, _events: Vec<Event>) -> Result<(), JobError> {
    Ok(())
}

#[test]
fn runs() {
    assert_eq!(Feed::descriptor().name, "events.feed");
    assert_eq!(
        <FeedSupervisor as Task>::DESCRIPTOR.name,
        "events.feed.supervisor"
    );
    assert_eq!(
        <FeedSupervisor as Task>::DESCRIPTOR.cron,
        jobs::consumer::DEFAULT_SUPERVISOR_CRON
    );
    assert_eq!(CopyConsumer::descriptor().queue, "consumers");
    assert_eq!(
        <CopyConsumerSupervisor as Task>::DESCRIPTOR.cron,
        "*/5 * * * *"
    );
    let _ = ConsumerLap::default();
}
