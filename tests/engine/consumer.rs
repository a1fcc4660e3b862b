//! `#[consumer]` on the memory driver and a test clock: laps of pages, each page's cursor in
//! its step, a caught-up lap sleeping and reading on when rows arrive, the next lap starting
//! where the last stopped, the supervisor's enqueue deduping onto a live lap (never two at
//! once) and restarting a lap that died from its last recorded cursor.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobs::consumer::{ConsumerLap, ConsumerReport};
use jobs::driver::backfill_store::BackfillListParams;
use jobs::prelude::*;
use jobs::testing::TestKit;
use jobs::Task;

/// A source that grows: id -> how many times the handler saw it.
#[derive(Default)]
struct Feed {
    rows: Mutex<BTreeMap<i64, u32>>,
    /// Fail the handler (terminally) on the page holding this id, once.
    poison: Mutex<Option<i64>>,
    pages: AtomicU32,
}

impl Feed {
    fn add(&self, ids: std::ops::RangeInclusive<i64>) {
        self.rows.lock().unwrap().extend(ids.map(|id| (id, 0)));
    }

    fn seen(&self) -> (usize, u32) {
        let rows = self.rows.lock().unwrap();
        let seen = rows.values().filter(|n| **n > 0).count();
        let most = rows.values().copied().max().unwrap_or(0);
        (seen, most)
    }
}

#[derive(Debug, Clone)]
struct Item {
    id: i64,
}

async fn items_after(
    pass: Pass,
    after: Option<i64>,
    limit: u32,
) -> Result<Page<Item, i64>, JobError> {
    let feed = pass.context::<Feed>()?;
    let rows: Vec<Item> = feed
        .rows
        .lock()
        .unwrap()
        .range(after.unwrap_or(0) + 1..)
        .take(limit as usize)
        .map(|(id, _)| Item { id: *id })
        .collect();
    Ok(Page::keyed(rows, |item| item.id))
}

#[consumer(name = "test.feed", source = items_after, batch = 10, lap = 4, poll = "5s")]
async fn feed_items(pass: Pass, items: Vec<Item>) -> Result<(), JobError> {
    let feed = pass.context::<Feed>()?;
    feed.pages.fetch_add(1, Ordering::SeqCst);
    let poison = *feed.poison.lock().unwrap();
    if let Some(id) = poison {
        if items.iter().any(|i| i.id == id) {
            *feed.poison.lock().unwrap() = None;
            return Err(JobError::terminal("a row the handler cannot take"));
        }
    }
    let mut rows = feed.rows.lock().unwrap();
    for item in items {
        *rows.entry(item.id).or_default() += 1;
    }
    Ok(())
}

fn kit(feed: &Arc<Feed>) -> TestKit {
    TestKit::with_worker(|w| w.context(feed.clone()))
}

fn report(job: &jobs::driver::JobRecord) -> ConsumerReport {
    serde_json::from_value(job.result.clone().expect("the lap's report")).unwrap()
}

#[tokio::test]
async fn a_lap_reads_pages_and_the_next_lap_starts_where_it_stopped() {
    let feed = Arc::new(Feed::default());
    feed.add(1..=35);
    let kit = kit(&feed);
    let lap = kit.run::<FeedItems>(ConsumerLap::default()).await;
    assert_eq!(lap.state, JobState::Done, "{:?}", lap.last_error);
    // 10 + 10 + 10 + 5: four pages, the lap's limit.
    let first = report(&lap);
    assert_eq!((first.pages, first.rows), (4, 35));
    assert_eq!(first.cursor, Some(serde_json::json!(35)));
    let steps: Vec<String> = kit
        .steps(lap.run_id)
        .await
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(
        steps,
        ["consumer:start", "page:0", "page:1", "page:2", "page:3"]
    );

    feed.add(36..=50);
    let next = kit.run::<FeedItems>(ConsumerLap::default()).await;
    let second = report(&next);
    assert_eq!(second.rows, 15, "only the rows after the last lap's cursor");
    assert_eq!(second.cursor, Some(serde_json::json!(50)));
    assert_eq!(feed.seen(), (50, 1), "every row once");

    // Each lap is in the ledger of passes, under `consumer:<name>`, newest first.
    let laps = kit
        .jobs()
        .backfills()
        .list(BackfillListParams {
            name: Some("consumer:test.feed".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(laps.len(), 2);
    assert_eq!(laps[0].last_cursor, Some(serde_json::json!(50)));
    // And never an orphaned backfill.
    let pending = kit.jobs().backfills().pending().await.unwrap();
    assert!(pending.orphaned.is_empty(), "{pending:?}");
}

#[tokio::test]
async fn a_caught_up_lap_sleeps_and_reads_what_arrives() {
    let feed = Arc::new(Feed::default());
    feed.add(1..=10);
    let kit = kit(&feed);
    let queued = kit.enqueue::<FeedItems>(ConsumerLap::default()).await;
    kit.run_until_idle().await;
    // Page 0 took ten rows, page 1 found nothing: the lap sleeps.
    let job = kit.job(queued.id).await;
    assert_eq!(job.state, JobState::Suspended);
    feed.add(11..=12);
    kit.advance(Duration::from_secs(5));
    kit.run_until_idle().await;
    assert_eq!(feed.seen(), (12, 1));
    kit.run_to_completion().await;
    let done = kit.job(queued.id).await;
    assert_eq!(done.state, JobState::Done);
    assert_eq!(report(&done).rows, 12);
}

#[tokio::test]
async fn the_supervisor_keeps_one_lap_live_and_restarts_a_dead_one() {
    let feed = Arc::new(Feed::default());
    feed.add(1..=25);
    *feed.poison.lock().unwrap() = Some(21);
    let kit = kit(&feed);
    assert_eq!(
        <FeedItemsSupervisor as Task>::DESCRIPTOR.name,
        "test.feed.supervisor"
    );
    assert_eq!(
        <FeedItemsSupervisor as Task>::DESCRIPTOR.cron,
        jobs::consumer::DEFAULT_SUPERVISOR_CRON
    );

    // Two fires while a lap is live: one lap.
    let first = kit.enqueue::<FeedItems>(ConsumerLap::default()).await;
    let again = kit.enqueue::<FeedItems>(ConsumerLap::default()).await;
    assert!(
        again.deduped,
        "the supervisor's second enqueue meets the live lap"
    );
    assert_eq!(again.id, first.id);

    // The lap dies on its third page (rows 21..=25): terminal, dead-lettered.
    kit.run_to_completion().await;
    let dead = kit.job(first.id).await;
    assert_eq!(dead.state, JobState::Dead);
    assert_eq!(feed.seen(), (20, 1));

    // The next fire starts a new lap from the dead lap's last recorded cursor.
    let restarted = kit.run::<FeedItems>(ConsumerLap::default()).await;
    assert_ne!(restarted.id, first.id);
    assert_eq!(
        restarted.state,
        JobState::Done,
        "{:?}",
        restarted.last_error
    );
    assert_eq!(report(&restarted).rows, 5);
    assert_eq!(feed.seen(), (25, 1), "no row handled twice, none skipped");
}
