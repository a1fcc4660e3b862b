//! `#[consumer]`: a durable reader of a cursor-based source (a vendor's cursor, a table by
//! keyset, a stream), kept running by a supervising task.
//!
//! A consumer is a keyset source and a per-page handler, as a backfill is
//! ([`mod@crate::backfill`]: the same `Pass`, `Page` and source shape), but it never ends: it reads
//! on from where it stopped, forever. Its job runs in **laps**: a lap reads pages, each in its
//! own durable step (`page:N`, whose output is the cursor after it), until a page comes back
//! empty (caught up) or it has read `lap` pages; then it enqueues the next lap (in the step
//! `consumer:next`): due at once when it stopped at its limit, `poll` later when it caught up.
//! Each lap records itself in the ledger of passes under `consumer:<name>` (the ledger
//! backfills use: status, pages, rows, the last cursor); the next lap starts from the last
//! cursor the ledger holds. Laps bound how many steps one run keeps, so a resumed lap replays
//! a bounded history.
//!
//! **Never two at once.** A consumer's job has a fleet-wide cap of one (`concurrency = 1`, in
//! the lease store), and its key is `<name>:<turn>`, laps alternating turns `0` and `1`. The
//! supervisor, a task named `<name>.supervisor` firing every minute by default, enqueues turn
//! `0`: while a lap of that turn is live (running, retrying, queued) the enqueue dedupes onto
//! it; a lap of the other turn that is live meanwhile enqueues its successor, of turn `0`,
//! onto the supervisor's, so the two chains become one, and the cap keeps any two from
//! running together. When a lap dies (dead-lettered), nothing enqueues its successor; the
//! supervisor's next fire starts a new lap from the last recorded cursor: the consumer is
//! restarted within one period.
//!
//! ```
//! use jobs::prelude::*;
//! use jobs::backfill::{Page, Pass};
//! use jobs::consumer::ConsumerLap;
//!
//! #[derive(Clone)]
//! struct Order { id: i64 }
//!
//! /// Keyset: the orders after `after`, in id order.
//! async fn orders_after(_pass: Pass, after: Option<i64>, limit: u32) -> Result<Page<Order, i64>, JobError> {
//!     let from = after.unwrap_or(0);
//!     let rows: Vec<Order> = (from + 1..=from + i64::from(limit)).take_while(|id| *id <= 250).map(|id| Order { id }).collect();
//!     Ok(Page::keyed(rows, |order| order.id))
//! }
//!
//! #[consumer(name = "orders.feed", source = orders_after, batch = 100, lap = 3)]
//! async fn feed_orders(_pass: Pass, orders: Vec<Order>) -> Result<(), JobError> {
//!     // at least once per row: write idempotently
//!     Ok(())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let kit = jobs::testing::TestKit::new();
//! let lap = kit.enqueue::<FeedOrders>(ConsumerLap::default()).await;
//! kit.run_until_idle().await; // a lap of three pages (100, 100 and 50); the next is due in 5s
//! assert_eq!(kit.job(lap.id).await.state, JobState::Done);
//! # }
//! ```
//!
//! Delivery is at least once: a page whose step completed is never handled again by its lap,
//! but a lap that died after handling a page and before recording it hands that page to the
//! next lap. Write the handler idempotently (upserts, a processed-id check).
//!
//! Laps are jobs like any other: the operator sees each one (`jobs ls --name <name>`), its
//! report is kept as its result, and `jobs backfills --name consumer:<name>` lists the ledger.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::Future;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::backfill::{PageDone, Pass};
use crate::driver::backfill_store::{
    BackfillBeginParams, BackfillFinishParams, BackfillListParams, BackfillProgressParams,
    BackfillStore, PassStatus,
};
use crate::enqueue::{EnqueueOptions, Prepared};
use crate::error::{ErrorCode, JobError};
use crate::job::Job;
use crate::run::Run;

/// Rows per page unless declared (`batch = ..`).
pub const DEFAULT_CONSUMER_BATCH: u32 = 100;
/// Pages per lap unless declared (`lap = ..`).
pub const DEFAULT_CONSUMER_LAP: u32 = 100;
/// How long after a caught-up lap the next one starts unless declared (`poll = ..`).
pub const DEFAULT_CONSUMER_POLL: Duration = Duration::from_secs(5);
/// The supervisor's schedule unless declared (`cron = ..`): every minute.
pub const DEFAULT_SUPERVISOR_CRON: &str = "* * * * *";
pub use crate::driver::backfill_store::CONSUMER_LEDGER_PREFIX;

/// What a consumer's job is enqueued with: its turn (the supervisor's laps are turn `0`, each
/// lap's successor the other turn). Each lap starts where the last stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConsumerLap {
    /// `0` or `1`: the lap's key is `<name>:<turn>`.
    #[serde(default)]
    pub turn: u8,
}

/// What one lap did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConsumerReport {
    /// The consumer.
    pub name: String,
    /// Pages read (the empty one a caught-up lap ended on included).
    pub pages: u64,
    /// Rows handled.
    pub rows: u64,
    /// The cursor after the lap, where the next one starts.
    pub cursor: Option<serde_json::Value>,
}

/// A consumer's declaration, as `#[consumer]` hands it to [`run_consumer`].
#[derive(Debug, Clone, Copy)]
pub struct ConsumerSpec {
    /// The consumer's name (its job's name and key).
    pub name: &'static str,
    /// Rows per page.
    pub batch: u32,
    /// Pages per lap.
    pub lap: u32,
    /// How long after a caught-up lap the next starts.
    pub poll: Duration,
}

/// The durable output of the step `page:N`: the cursor after the page and the lap's counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Checkpoint {
    cursor: Option<serde_json::Value>,
    pages: u64,
    rows: u64,
    /// The page read nothing new.
    empty: bool,
}

/// The ledger name of a consumer's laps.
pub fn ledger_name(name: &str) -> String {
    format!("{CONSUMER_LEDGER_PREFIX}{name}")
}

/// Not public API: the body `#[consumer]` generates for its job.
#[doc(hidden)]
pub async fn run_consumer<J, F, Fut>(
    run: Run,
    lap: ConsumerLap,
    spec: ConsumerSpec,
    page: F,
) -> Result<ConsumerReport, JobError>
where
    J: Job<Input = ConsumerLap>,
    F: Fn(Pass, Option<serde_json::Value>, u32) -> Fut,
    Fut: Future<Output = Result<PageDone, JobError>>,
{
    let driver = run.driver().clone();
    let ledger = driver.backfill_store().ok_or_else(|| {
        JobError::new(
            ErrorCode::JobDeclarationInvalid,
            format!(
                "consumer `{}`: the {} store keeps no ledger of passes, where a consumer keeps its cursor",
                spec.name,
                driver.name()
            ),
        )
        .with_fix("run consumers on a store with a ledger of passes (every built-in store has one)")
    })?;
    let name = ledger_name(spec.name);
    // Where this lap starts: the last cursor of the newest lap before it, read once.
    let start: Option<serde_json::Value> = run
        .step("consumer:start", async {
            let laps = ledger
                .backfill_list(&BackfillListParams {
                    name: Some(name.clone()),
                    limit: Some(2),
                    ..BackfillListParams::default()
                })
                .await?;
            Ok::<_, JobError>(
                laps.into_iter()
                    .find(|lap| lap.run_id != run.run_id())
                    .and_then(|lap| lap.last_cursor),
            )
        })
        .await?;
    ledger
        .backfill_begin(&BackfillBeginParams {
            id: crate::entropy::new_id(),
            name: name.clone(),
            tenant: None,
            run_id: run.run_id(),
            job_id: run.job_id(),
            checksum: String::new(),
            force: true,
            now: run.now(),
        })
        .await?;
    let mut last = Checkpoint {
        cursor: start,
        pages: 0,
        rows: 0,
        empty: false,
    };
    match pages(&run, spec, ledger, &page, &mut last).await {
        Ok(()) => {
            finish(&run, ledger, PassStatus::Completed, &last).await?;
            next_lap::<J>(&run, &lap, spec, last.empty).await?;
            Ok(ConsumerReport {
                name: spec.name.to_string(),
                pages: last.pages,
                rows: last.rows,
                cursor: last.cursor,
            })
        }
        Err(error) => {
            if crate::backfill::ends_for_good(&run, &error) {
                if let Err(unrecorded) = finish(&run, ledger, PassStatus::Failed, &last).await {
                    tracing::warn!(
                        target: "jobs.consumer.failure-unrecorded",
                        consumer = spec.name,
                        code = unrecorded.code().map(|c| c.as_str()),
                        "a failed lap could not be recorded"
                    );
                }
            }
            Err(error)
        }
    }
}

async fn finish(
    run: &Run,
    ledger: &dyn BackfillStore,
    status: PassStatus,
    last: &Checkpoint,
) -> Result<(), JobError> {
    ledger
        .backfill_finish(&BackfillFinishParams {
            run_id: run.run_id(),
            status,
            batches: last.pages,
            rows: last.rows,
            last_cursor: last.cursor.clone(),
            now: run.now(),
        })
        .await
}

/// Enqueues the lap after this one, once (a step): the other turn, due now after a lap that
/// stopped at its limit, `poll` later after one that caught up.
async fn next_lap<J: Job<Input = ConsumerLap>>(
    run: &Run,
    lap: &ConsumerLap,
    spec: ConsumerSpec,
    caught_up: bool,
) -> Result<(), JobError> {
    run.step("consumer:next", async {
        let now = run.now();
        let next = ConsumerLap {
            turn: 1 - lap.turn.min(1),
        };
        let due = if caught_up {
            now + chrono::TimeDelta::from_std(spec.poll).unwrap_or_default()
        } else {
            now
        };
        let mut requests = vec![Prepared::of::<J>(&next)?.into_request(
            &EnqueueOptions::new()
                .run_at(due)
                .actor(format!("job:{}", run.job_id()))
                .direct(),
            now,
        )?];
        crate::enqueue::send_many(&**run.driver(), run.local_wake(), &mut requests).await?;
        Ok::<_, JobError>(())
    })
    .await
}

/// The lap's pages, from the first not yet checkpointed, until one comes back empty or the
/// lap's limit.
async fn pages<F, Fut>(
    run: &Run,
    spec: ConsumerSpec,
    ledger: &dyn BackfillStore,
    page: &F,
    last: &mut Checkpoint,
) -> Result<(), JobError>
where
    F: Fn(Pass, Option<serde_json::Value>, u32) -> Fut,
    Fut: Future<Output = Result<PageDone, JobError>>,
{
    for n in 0..u64::from(spec.lap) {
        let ran = AtomicBool::new(false);
        let before = last.clone();
        let name = format!("page:{n}");
        let step = run.step(&name, async {
            ran.store(true, Ordering::Relaxed);
            let pass = Pass::new(run.clone(), spec.name, n);
            let done = page(pass, before.cursor.clone(), spec.batch).await?;
            Ok::<_, JobError>(Checkpoint {
                empty: done.rows == 0,
                cursor: done.next.or(before.cursor),
                pages: before.pages + 1,
                rows: before.rows + done.rows,
            })
        });
        *last = step.await?;
        if ran.load(Ordering::Relaxed) {
            ledger
                .backfill_progress(&BackfillProgressParams {
                    run_id: run.run_id(),
                    batches: last.pages,
                    rows: last.rows,
                    last_cursor: last.cursor.clone(),
                    now: run.now(),
                })
                .await?;
        }
        if last.empty {
            break;
        }
    }
    Ok(())
}
