// A consumer's handler gets the pass, not the run: a page is already a step.
use jobs::prelude::*;

#[derive(Debug, Clone)]
pub struct Event {
    pub id: i64,
}

pub async fn events_after(_pass: Pass, after: Option<i64>, _limit: u32) -> Result<Page<Event, i64>, JobError> {
    let _ = after;
    Ok(Page::end())
}

#[consumer(name = "events.feed", source = events_after)]
pub async fn feed(_run: Run, _events: Vec<Event>) -> Result<(), JobError> {
    Ok(())
}

fn main() {}
