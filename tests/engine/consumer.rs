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

/// Every lap of the consumer, oldest first.
async fn laps(kit: &TestKit) -> Vec<jobs::driver::JobRecord> {
    let page = kit
        .jobs()
        .operator()
        .list_jobs(&jobs::driver::introspect::JobListParams {
            name: Some("test.feed".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut all = Vec::new();
    for row in page.jobs.iter().rev() {
        all.push(kit.job(row.id).await);
    }
    all
}

fn live(state: JobState) -> bool {
    matches!(
        state,
        JobState::Ready | JobState::Delayed | JobState::Running | JobState::Suspended
    )
}

#[tokio::test]
async fn laps_read_on_from_the_last_cursor_and_each_enqueues_the_next() {
    let feed = Arc::new(Feed::default());
    feed.add(1..=35);
    let kit = kit(&feed);
    let first = kit.enqueue::<FeedItems>(ConsumerLap::default()).await;
    kit.run_until_idle().await;
    let all = laps(&kit).await;
    // Lap 1 stopped at its limit (10 + 10 + 10 + 5); lap 2, due at once, found nothing new
    // and enqueued lap 3, due after `poll`.
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(all[0].id, first.id);
    let one = report(&all[0]);
    assert_eq!((one.pages, one.rows), (4, 35));
    assert_eq!(one.cursor, Some(serde_json::json!(35)));
    let mut steps: Vec<String> = kit
        .steps(all[0].run_id)
        .await
        .into_iter()
        .map(|s| s.name)
        .collect();
    steps.sort();
    assert_eq!(
        steps,
        [
            "consumer:next",
            "consumer:start",
            "page:0",
            "page:1",
            "page:2",
            "page:3"
        ]
    );
    let two = report(&all[1]);
    assert_eq!((two.pages, two.rows), (1, 0), "caught up at once");
    assert_eq!(all[2].state, JobState::Delayed);

    feed.add(36..=50);
    kit.advance(Duration::from_secs(5));
    kit.run_until_idle().await;
    let all = laps(&kit).await;
    let three = report(&all[2]);
    assert_eq!(three.rows, 15, "only the rows after the last lap's cursor");
    assert_eq!(three.cursor, Some(serde_json::json!(50)));
    assert_eq!(feed.seen(), (50, 1), "every row once");

    // Each lap is in the ledger of passes, under `consumer:<name>`, newest first.
    let ledger = kit
        .jobs()
        .backfills()
        .list(BackfillListParams {
            name: Some("consumer:test.feed".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(ledger.len(), 3);
    assert_eq!(ledger[0].last_cursor, Some(serde_json::json!(50)));
    // And never an orphaned backfill.
    let pending = kit.jobs().backfills().pending().await.unwrap();
    assert!(pending.orphaned.is_empty(), "{pending:?}");
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

    // The lap dies on its third page (rows 21..=25): terminal, dead-lettered, no successor.
    kit.run_until_idle().await;
    assert_eq!(kit.job(first.id).await.state, JobState::Dead);
    assert_eq!(feed.seen(), (20, 1));
    assert_eq!(laps(&kit).await.len(), 1);

    // The next fire starts a new lap from the dead lap's last recorded cursor.
    let restarted = kit.enqueue::<FeedItems>(ConsumerLap::default()).await;
    assert!(!restarted.deduped);
    kit.run_until_idle().await;
    let lap = kit.job(restarted.id).await;
    assert_eq!(lap.state, JobState::Done, "{:?}", lap.last_error);
    assert_eq!(report(&lap).rows, 5);
    assert_eq!(feed.seen(), (25, 1), "no row handled twice, none skipped");
}

#[tokio::test]
async fn a_supervisor_lap_and_a_chained_lap_merge_and_never_run_together() {
    let feed = Arc::new(Feed::default());
    feed.add(1..=5);
    let kit = kit(&feed);
    // Lap of turn 0 catches up; its successor (turn 1) waits `poll`.
    kit.enqueue::<FeedItems>(ConsumerLap::default()).await;
    kit.run_until_idle().await;
    let waiting = laps(&kit).await;
    assert_eq!(waiting.len(), 2);
    assert!(live(waiting[1].state));
    // The supervisor fires meanwhile: a turn-0 lap beside the waiting turn-1 one.
    let supervised = kit.enqueue::<FeedItems>(ConsumerLap::default()).await;
    assert!(!supervised.deduped);
    feed.add(6..=30);
    for _ in 0..10 {
        kit.advance(Duration::from_secs(5));
        kit.run_until_idle().await;
        let running = laps(&kit)
            .await
            .iter()
            .filter(|l| l.state == JobState::Running)
            .count();
        assert!(running <= 1, "never two laps running");
    }
    // Every row once, and the chains merged: one live lap, not two.
    assert_eq!(feed.seen(), (30, 1));
    let live_laps = laps(&kit).await.iter().filter(|l| live(l.state)).count();
    assert_eq!(live_laps, 1, "the two chains became one");
}
