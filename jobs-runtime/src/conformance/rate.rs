//! Fleet-wide rate limits and queue caps, held in the driver's lease store: several workers
//! share one store and one [`TestClock`], and no window of the declared length ever holds more
//! starts than the limit, while under load the starts equal it, window after window. A run over
//! a limit or a cap is handed back without spending an attempt.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::Notify;

use super::worker::{descriptor, subject, tick, Subject};
use super::*;
use crate::client::Jobs;
use crate::clock::{add, TestClock};
use crate::descriptor::{JobDescriptor, RateLimit};
use crate::driver::lease::LeaseHoldersParams;
use crate::job::Job;
use crate::registry::Registry;
use crate::run::Run;
use crate::worker::{ExecutionOutcome, QueueLimits, Worker, SHED_DELAY};

/// The window of every rate below.
const PER: Duration = Duration::from_secs(60);

/// At most 3 starts a minute, fleet-wide.
#[derive(Debug)]
pub struct Rated;

impl Job for Rated {
    type Input = Subject;
    type Output = ();
    const DESCRIPTOR: JobDescriptor = {
        let mut d = descriptor("conformance.rated");
        d.rate = Some(RateLimit {
            limit: 3,
            per: PER,
            keyed: false,
        });
        d
    };

    fn idempotency_key(input: &Subject) -> String {
        format!("rated:{}", input.key)
    }

    fn tenant(_: &Subject) -> Option<String> {
        None
    }

    fn run(_run: Run, _input: Subject) -> BoxFuture<'static, Result<(), JobError>> {
        Box::pin(async { Ok(()) })
    }
}

/// At most 2 starts a minute per key: the key is the input's key up to its first `-`.
#[derive(Debug)]
pub struct RatedPerKey;

impl Job for RatedPerKey {
    type Input = Subject;
    type Output = ();
    const DESCRIPTOR: JobDescriptor = {
        let mut d = descriptor("conformance.rated-per-key");
        d.rate = Some(RateLimit {
            limit: 2,
            per: PER,
            keyed: true,
        });
        d
    };

    fn idempotency_key(input: &Subject) -> String {
        format!("rated-per-key:{}", input.key)
    }

    fn tenant(_: &Subject) -> Option<String> {
        None
    }

    fn rate_key(input: &Subject) -> Option<String> {
        input.key.split('-').next().map(str::to_string)
    }

    fn run(_run: Run, _input: Subject) -> BoxFuture<'static, Result<(), JobError>> {
        Box::pin(async { Ok(()) })
    }
}

/// No limit of its own: the queue's limits hold it.
#[derive(Debug)]
pub struct Queued;

impl Job for Queued {
    type Input = Subject;
    type Output = ();
    const DESCRIPTOR: JobDescriptor = descriptor("conformance.queued");

    fn idempotency_key(input: &Subject) -> String {
        format!("queued:{}", input.key)
    }

    fn tenant(_: &Subject) -> Option<String> {
        None
    }

    fn run(_run: Run, _input: Subject) -> BoxFuture<'static, Result<(), JobError>> {
        Box::pin(async { Ok(()) })
    }
}

/// Where a [`Gated`] run says it has started, and waits to be let go.
#[derive(Debug, Default)]
pub struct Gate {
    entered: Notify,
    release: Notify,
}

/// Holds its run open until its gate lets it go; 5 starts a minute.
#[derive(Debug)]
pub struct Gated;

impl Job for Gated {
    type Input = Subject;
    type Output = ();
    const DESCRIPTOR: JobDescriptor = {
        let mut d = descriptor("conformance.gated");
        d.rate = Some(RateLimit {
            limit: 5,
            per: PER,
            keyed: false,
        });
        d
    };

    fn idempotency_key(input: &Subject) -> String {
        format!("gated:{}", input.key)
    }

    fn tenant(_: &Subject) -> Option<String> {
        None
    }

    fn run(run: Run, _input: Subject) -> BoxFuture<'static, Result<(), JobError>> {
        Box::pin(async move {
            let gate = run.context::<Gate>()?;
            gate.entered.notify_one();
            gate.release.notified().await;
            Ok(())
        })
    }
}

/// `count` workers on one client (one store, one clock) over the job `J`.
fn workers<J: Job>(
    jobs: &Jobs,
    count: usize,
    configure: impl Fn(crate::worker::WorkerBuilder) -> crate::worker::WorkerBuilder,
) -> Vec<Worker> {
    (0..count)
        .map(|n| {
            let mut registry = Registry::new();
            registry.register::<J>().expect("one job");
            configure(jobs.worker().registry(registry).queues([QUEUE]))
                .id(format!("rate-worker-{n}"))
                .build()
                .expect("the worker builds")
        })
        .collect()
}

fn client(driver: Arc<dyn JobDriver>) -> (Jobs, TestClock) {
    let clock = TestClock::at(t0());
    (Jobs::with_clock(driver, Arc::new(clock.clone())), clock)
}

/// No window of length `per` starting at any start holds more than `limit` starts (the
/// fullest window starts at a start, so these are all the windows there are).
fn assert_no_window_over(starts: &[Timestamp], limit: usize, per: Duration) {
    for from in starts {
        let until = add(*from, per);
        let inside = starts.iter().filter(|s| *s >= from && *s < &until).count();
        assert!(
            inside <= limit,
            "{inside} starts in the window of {per:?} from {from}, over the limit of {limit}: \
             {starts:?}"
        );
    }
}

/// Each of the `windows` windows of [`PER`] from `t0` holds exactly `limit` starts: under load
/// the throughput is the limit.
fn assert_windows_full(starts: &[Timestamp], limit: usize, windows: u32) {
    for window in 0..windows {
        let from = add(t0(), PER * window);
        let until = add(from, PER);
        let inside = starts.iter().filter(|s| **s >= from && **s < until).count();
        assert_eq!(inside, limit, "window {window}: {starts:?}");
    }
    assert_eq!(starts.len(), limit * windows as usize, "{starts:?}");
}

/// Drives `workers` every 20 s for `windows` windows of [`PER`], each worker one pass per step,
/// and answers every start's time. A shed is due again within the window, never before the
/// next step can start it.
async fn drive(jobs: &Jobs, clock: &TestClock, workers: &[Worker], windows: u32) -> Vec<Timestamp> {
    let step = PER / 3;
    let mut starts = Vec::new();
    for _ in 0..windows * 3 {
        let now = jobs.now();
        for worker in workers {
            for run in tick(worker).await {
                match run.outcome {
                    ExecutionOutcome::Completed => {
                        assert_eq!(run.attempt, 1, "a start spends one attempt");
                        starts.push(now);
                    }
                    ExecutionOutcome::Shed => {
                        let due = run.resume_at.expect("a shed says when it is due");
                        assert!(
                            due > now && due <= add(now, PER),
                            "a run over the rate is due again within the window: {due} at {now}"
                        );
                    }
                    other => panic!("a run over a rate is shed, not {other:?}"),
                }
            }
        }
        clock.advance(step);
    }
    starts
}

/// Three workers over one job limited to 3 starts a minute, 40 runs queued, for ten minutes:
/// no minute ever holds more than 3 starts, each of the ten holds exactly 3 (the throughput
/// equals the limit under load), and every run handed back spent no attempt.
pub async fn rate_limit_holds_every_window_across_workers(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let (jobs, clock) = client(driver.clone());
    let mut ids = Vec::new();
    for n in 0..40 {
        ids.push(
            jobs.enqueue::<Rated>(subject(&n.to_string()))
                .await
                .unwrap()
                .id,
        );
    }
    let workers = workers::<Rated>(&jobs, 3, |w| w);
    let starts = drive(&jobs, &clock, &workers, 10).await;
    assert_no_window_over(&starts, 3, PER);
    assert_windows_full(&starts, 3, 10);
    let mut done = 0;
    for id in ids {
        let row = get(d, id).await;
        match row.state {
            JobState::Done => {
                assert_eq!(row.attempt, 1);
                done += 1;
            }
            JobState::Ready | JobState::Delayed => {
                assert_eq!(row.attempt, 0, "waiting on the rate spends no attempt")
            }
            other => panic!("a rated run is done or waiting, not {other:?}"),
        }
    }
    assert_eq!(done, 30);
}

/// A keyed rate counts each key apart: 2 starts a minute for key `a` and 2 for key `b`, the
/// rest due again when the key's first start lapses.
pub async fn rate_limit_per_key_counts_each_key_apart(driver: Arc<dyn JobDriver>) {
    let (jobs, clock) = client(driver.clone());
    for key in ["a", "b"] {
        for n in 0..4 {
            jobs.enqueue::<RatedPerKey>(subject(&format!("{key}-{n}")))
                .await
                .unwrap();
        }
    }
    let workers = workers::<RatedPerKey>(&jobs, 2, |w| w);
    let mut started = 0;
    for worker in &workers {
        for run in tick(worker).await {
            match run.outcome {
                ExecutionOutcome::Completed => started += 1,
                ExecutionOutcome::Shed => assert_eq!(run.resume_at, Some(add(t0(), PER))),
                other => panic!("a run over its key's rate is shed, not {other:?}"),
            }
        }
    }
    assert_eq!(started, 4, "2 starts for each of 2 keys");
    clock.advance(PER - Duration::from_secs(1));
    for worker in &workers {
        assert!(
            tick(worker).await.is_empty(),
            "nothing is due within the window"
        );
    }
    clock.advance(Duration::from_secs(1));
    let mut started = 0;
    for worker in &workers {
        started += tick(worker)
            .await
            .iter()
            .filter(|run| run.outcome == ExecutionOutcome::Completed)
            .count();
    }
    assert_eq!(started, 4, "the next window starts 2 more of each key");
}

/// A queue's rate, given to every worker serving it, holds across them like a job's.
pub async fn queue_rate_holds_every_window_across_workers(driver: Arc<dyn JobDriver>) {
    let (jobs, clock) = client(driver.clone());
    for n in 0..12 {
        jobs.enqueue::<Queued>(subject(&n.to_string()))
            .await
            .unwrap();
    }
    let limits = QueueLimits::new().rate(2, PER);
    let workers = workers::<Queued>(&jobs, 3, |w| w.queue_limits(QUEUE, limits));
    let starts = drive(&jobs, &clock, &workers, 3).await;
    assert_no_window_over(&starts, 2, PER);
    assert_windows_full(&starts, 2, 3);
}

/// A queue's fleet-wide cap holds across workers: while one worker's run holds the queue's one
/// slot, another worker's claim is handed back uncounted, and, turned away by the cap before
/// the job's rate is asked, spends no start of it. The slot is given back when the run settles.
pub async fn queue_cap_holds_across_workers_and_spends_no_rate(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let store = d.lease_store().expect("this case needs a lease store");
    let (jobs, clock) = client(driver.clone());
    jobs.enqueue::<Gated>(subject("1")).await.unwrap();
    jobs.enqueue::<Gated>(subject("2")).await.unwrap();
    let gate = Arc::new(Gate::default());
    let limits = QueueLimits::new().concurrency(1);
    let workers = workers::<Gated>(&jobs, 2, |w| {
        w.queue_limits(QUEUE, limits)
            .context(gate.clone())
            .concurrency(1)
    });
    let holding = workers[0].clone();
    let held = tokio::spawn(async move { tick(&holding).await });
    gate.entered.notified().await;
    let holders = |key: String| {
        let now = jobs.now();
        async move {
            store
                .lease_holders(&LeaseHoldersParams { key: &key, now })
                .await
                .unwrap()
                .len()
        }
    };
    let queue_slot = format!("queue:{QUEUE}");
    assert_eq!(
        holders(queue_slot.clone()).await,
        1,
        "the run holds the slot"
    );

    let pass = tick(&workers[1]).await;
    assert_eq!(pass.len(), 1);
    assert_eq!(
        pass[0].outcome,
        ExecutionOutcome::Shed,
        "over the queue's cap"
    );
    let waiting = pass[0].job_id;
    assert_eq!(
        holders("rate:conformance.gated".into()).await,
        1,
        "the run turned away by the cap took no start of the rate"
    );
    let row = get(d, waiting).await;
    assert_eq!(row.attempt, 0, "a shed spends no attempt");

    gate.release.notify_one();
    let pass = held.await.expect("the holding pass");
    assert_eq!(pass.len(), 1);
    assert_eq!(pass[0].outcome, ExecutionOutcome::Completed);
    assert_eq!(get(d, pass[0].job_id).await.state, JobState::Done);
    assert_eq!(
        holders(queue_slot).await,
        0,
        "the slot is given back at the settle"
    );

    clock.advance(SHED_DELAY);
    let releasing = gate.clone();
    let pass = tokio::join!(tick(&workers[1]), async move {
        releasing.entered.notified().await;
        releasing.release.notify_one();
    })
    .0;
    assert_eq!(pass.len(), 1);
    assert_eq!(pass[0].outcome, ExecutionOutcome::Completed);
    assert_eq!(pass[0].job_id, waiting);
    assert_eq!(get(d, waiting).await.state, JobState::Done);
}
