//! The simulated fleet: the jobs it runs (each step body and each read of a step's output
//! reported to the history), and the software of each kind of process (worker, scheduler,
//! producer, operator), started again from scratch after a crash.

use std::sync::Arc;
use std::time::Duration;

use jobs::driver::{JobDriver, JobId, JobRecord};
use jobs::prelude::*;
use jobs::{Entry, Jobs, LockOptions, Occurrence};
use rand::Rng;

use crate::clock::{Offset, SimClock};
use crate::history::{Accepted, Invariant};
use crate::store::FaultyStore;
use crate::world::World;

/// Jobs the producers enqueue in a run, unless told otherwise.
pub const DEFAULT_JOBS: u32 = 30;

/// What a job body reports to: its process's view of the run's history, and its client (for
/// fleet-wide locks).
#[derive(Debug)]
pub struct Probe {
    world: Arc<World>,
    jobs: Jobs,
}

impl Probe {
    /// A step body starts: a fresh value, and a violation if the step had already committed.
    fn body(&self, run: &Run, step: &str) -> u64 {
        let mut history = self.world.history();
        history.stats.bodies += 1;
        let key = (run.run_id(), step.to_string());
        if let Some((_, at)) = history.commits.get(&key) {
            let at = *at;
            history.violated(
                Invariant::StepRunsOnce,
                format!(
                    "step `{step}` of run {} ran again after its commit (event {at})",
                    run.run_id()
                ),
            );
        }
        history.note(|| format!("body {} {step} attempt {}", run.run_id(), run.attempt()))
    }

    /// A parent read child `i`'s answer: a success must be the child's own answer, a failure
    /// must be a child that did end that way (dead, failed or cancelled: under faults a child
    /// may spend its attempts, and the operator cancels jobs).
    async fn child_answer(&self, run: &Run, i: u64, expected: u64, answer: Result<u64, JobError>) {
        let wrong = match answer {
            Ok(got) if got == expected => return,
            Ok(got) => format!("the answer {got}, not {expected}"),
            Err(error) => {
                let links = self.world.store.job_links(run.job_id()).await.ok();
                let mut ended = None;
                for (id, _) in links.into_iter().flat_map(|l| l.children) {
                    let row = self.row(id).await;
                    if let Some(row) =
                        row.filter(|r| r.input.get("i") == Some(&serde_json::json!(i)))
                    {
                        ended = Some(row.state);
                        break;
                    }
                }
                if matches!(
                    ended,
                    Some(JobState::Dead | JobState::Failed | JobState::Cancelled)
                ) {
                    return;
                }
                format!(
                    "the failure {:?} of a child in state {ended:?}",
                    error.code()
                )
            }
        };
        self.world.history().violated(
            Invariant::ChildrenAnswer,
            format!(
                "run {} of sim.fanout read child {i}'s answer as {wrong}",
                run.run_id()
            ),
        );
    }

    /// A run reached its wait (the first time counts).
    fn wait_begins(&self, run: &Run) {
        let at = crate::clock::simulated_ms();
        let mut history = self.world.history();
        history.wait_begun.entry(run.run_id()).or_insert(at);
        history.note(|| format!("wait {} attempt {}", run.run_id(), run.attempt()));
    }

    /// A wait on `key` answered `got`: a payload published for that key; or, on a timeout, no
    /// event for it published after the wait was written and well before its deadline (3 s
    /// of margin: the waiter's clock may jump, and its deadline is its clock's).
    fn waited(&self, run: &Run, key: &str, got: Option<u64>) {
        let mut history = self.world.history();
        history.note(|| format!("waited {} {got:?}", run.run_id()));
        let published = history.published.get(key).cloned().unwrap_or_default();
        let wrong = match got {
            Some(value) => (!published
                .iter()
                .any(|(_, _, p)| *p == serde_json::json!(value)))
            .then(|| format!("answered {value}, never published for `{key}`")),
            None => {
                let written = history.waits.get(&run.run_id()).copied();
                let begun = history.wait_begun.get(&run.run_id()).copied();
                let deadline = begun.map(|b| b + WAIT.as_millis() as u64);
                match (written, deadline) {
                    (Some(written), Some(deadline)) => published
                        .iter()
                        .find(|(order, at, _)| *order > written && at + 3_000 < deadline)
                        .map(|(order, at, _)| {
                            format!(
                                "timed out on `{key}` though an event was published at {at} ms (event {order}), its wait written at event {written}, due by {deadline} ms"
                            )
                        }),
                    _ => None,
                }
            }
        };
        if let Some(wrong) = wrong {
            history.violated(
                Invariant::EventsDelivered,
                format!("run {} of sim.waiter {wrong}", run.run_id()),
            );
        }
    }

    /// Job `id`'s row, read past the faults.
    async fn row(&self, id: JobId) -> Option<JobRecord> {
        let params = jobs::driver::JobGetParams { id };
        self.world.store.job_get(&params).await.ok().flatten()
    }

    /// A step answered `value`: it must be the output its commit kept.
    fn read(&self, run: &Run, step: &str, value: u64) {
        let mut history = self.world.history();
        let key = (run.run_id(), step.to_string());
        let kept = history.commits.get(&key).map(|(output, _)| output.clone());
        if kept != Some(serde_json::json!(value)) {
            history.violated(
                Invariant::StepReadsItsCommit,
                format!(
                    "step `{step}` of run {} answered {value}, its commit kept {kept:?}",
                    run.run_id()
                ),
            );
        }
    }
}

/// The input of `sim.work`: two steps, a nap between them when asked, and a second step
/// that fails its first `flaky` attempts.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct WorkInput {
    /// Which.
    pub n: u64,
    /// Attempts the second step fails before it succeeds.
    pub flaky: u32,
    /// Whether the job sleeps (parks) between its steps.
    pub nap: bool,
    /// How long the second step's body works, in milliseconds.
    pub dwell: u64,
}

#[job(name = "sim.work", key = "w:{n}", tenant = none, retry(attempts = 4, backoff = fixed, delay = "2s", jitter = full))]
async fn sim_work(run: Run, input: WorkInput) -> Result<(), JobError> {
    let probe = run.context::<Probe>()?;
    let a: u64 = run
        .step("a", async { Ok::<_, JobError>(probe.body(&run, "a")) })
        .await?;
    probe.read(&run, "a", a);
    if input.nap {
        run.sleep("3s").await?;
    }
    let b: u64 = run
        .step("b", async {
            if run.attempt() <= input.flaky {
                return Err(JobError::retryable("the simulated upstream is down"));
            }
            let value = probe.body(&run, "b");
            tokio::time::sleep(Duration::from_millis(input.dwell)).await;
            Ok(value)
        })
        .await?;
    probe.read(&run, "b", b);
    Ok(())
}

/// The input of `sim.keyed`: a key shared by two tenants.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct KeyedInput {
    /// The tenant.
    pub account: String,
    /// The key, the same in both tenants.
    pub k: u32,
}

/// One job per key per tenant, one run per tenant at a time, and the tenant's account under a
/// fleet-wide lock while it works.
#[job(name = "sim.keyed", key = "k:{k}", tenant = account, concurrency(key = "{account}", limit = 1))]
async fn sim_keyed(run: Run, input: KeyedInput) -> Result<(), JobError> {
    let probe = run.context::<Probe>()?;
    let lock = LockOptions::ttl(Duration::from_secs(3)).wait(Duration::from_secs(4));
    let a: u64 = run
        .step("a", async {
            // The body is noted as it starts: an attempt that lost its claim may still finish
            // its body after another attempt committed the step, and that is allowed.
            let value = probe.body(&run, "a");
            let account = format!("account:{}", input.account);
            probe
                .jobs
                .with_lock(&account, lock, |_guard| async {
                    // Long enough that a second enqueue of the key often meets this one live.
                    tokio::time::sleep(Duration::from_millis(700)).await;
                    Ok::<_, JobError>(value)
                })
                .await
        })
        .await?;
    probe.read(&run, "a", a);
    Ok(())
}

/// The input of `sim.capped`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CappedInput {
    /// Which.
    pub n: u64,
}

/// At most two at once across the fleet, and three starts per five seconds.
#[job(name = "sim.capped", key = "c:{n}", tenant = none, concurrency = 2, rate(limit = 3, per = "5s"))]
async fn sim_capped(run: Run, _input: CappedInput) -> Result<(), JobError> {
    let probe = run.context::<Probe>()?;
    let a: u64 = run
        .step("a", async {
            let value = probe.body(&run, "a");
            tokio::time::sleep(Duration::from_millis(900)).await;
            Ok::<_, JobError>(value)
        })
        .await?;
    probe.read(&run, "a", a);
    Ok(())
}

/// The input of `sim.child`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChildInput {
    /// The parent's `n`.
    pub parent: u64,
    /// Which child.
    pub i: u64,
}

/// A child: answers `parent + i`, after a step.
#[job(name = "sim.child", key = "child:{parent}:{i}", tenant = none, keep_result)]
async fn sim_child(run: Run, input: ChildInput) -> Result<u64, JobError> {
    let probe = run.context::<Probe>()?;
    let a: u64 = run
        .step("a", async { Ok::<_, JobError>(probe.body(&run, "a")) })
        .await?;
    probe.read(&run, "a", a);
    Ok(input.parent.wrapping_add(input.i))
}

/// The input of `sim.fanout`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FanoutInput {
    /// Which.
    pub n: u64,
}

/// A parent: fans out to three children and must get back each one's own answer.
#[job(name = "sim.fanout", key = "fan:{n}", tenant = none)]
async fn sim_fanout(run: Run, input: FanoutInput) -> Result<(), JobError> {
    let probe = run.context::<Probe>()?;
    let children = (0..3).map(|i| ChildInput { parent: input.n, i });
    let answers = run.invoke_all(SimChild, children).await?;
    for (i, answer) in answers.into_iter().enumerate() {
        probe
            .child_answer(&run, i as u64, input.n.wrapping_add(i as u64), answer)
            .await;
    }
    Ok(())
}

/// The input of `sim.waiter`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct WaiterInput {
    /// Which.
    pub n: u64,
    /// The event key it waits on (`k0`..`k2`).
    pub k: u32,
}

/// How long a waiter waits for its event.
const WAIT: Duration = Duration::from_secs(8);

/// A waiter: parks until `sim.go` is published for its key, or 8 s pass.
#[job(name = "sim.waiter", key = "wait:{n}", tenant = none)]
async fn sim_waiter(run: Run, input: WaiterInput) -> Result<(), JobError> {
    let probe = run.context::<Probe>()?;
    let key = format!("k{}", input.k);
    probe.wait_begins(&run);
    let got: Option<u64> = run.wait_for_event("sim.go", &key, WAIT).await?;
    probe.waited(&run, &key, got);
    Ok(())
}

/// The input of `sim.member` and `sim.batch_done`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct MemberInput {
    /// The batch's `n`.
    pub n: u64,
    /// Which member.
    pub i: u64,
}

/// A batch's member: one step.
#[job(name = "sim.member", key = "member:{n}:{i}", tenant = none)]
async fn sim_member(run: Run, _input: MemberInput) -> Result<(), JobError> {
    let probe = run.context::<Probe>()?;
    let a: u64 = run
        .step("a", async { Ok::<_, JobError>(probe.body(&run, "a")) })
        .await?;
    probe.read(&run, "a", a);
    Ok(())
}

/// The input of `sim.batch_done`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BatchInput {
    /// Which.
    pub n: u64,
}

/// A batch's callback: every member must have settled when it runs.
#[job(name = "sim.batch_done", key = "batch:{n}", tenant = none)]
async fn sim_batch_done(run: Run, input: BatchInput) -> Result<(), JobError> {
    let probe = run.context::<Probe>()?;
    let report = run.batch().await?;
    let live = probe
        .world
        .store
        .all_jobs()
        .into_iter()
        .filter(|r| r.name == "sim.member" && r.input.get("n") == Some(&serde_json::json!(input.n)))
        .filter(|r| r.state.is_live())
        .count();
    if report.is_none() || live > 0 {
        probe.world.history().violated(
            Invariant::BatchCallbackLast,
            format!(
                "the callback of batch {} ran with {live} member(s) live (report read: {})",
                input.n,
                report.is_some()
            ),
        );
    }
    Ok(())
}

/// The input of `sim.after`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AfterInput {
    /// Which.
    pub n: u64,
    /// The job it depends on.
    pub before: uuid::Uuid,
}

/// A job that depends on another: when it runs, that one is done.
#[job(name = "sim.after", key = "after:{n}", tenant = none)]
async fn sim_after(run: Run, input: AfterInput) -> Result<(), JobError> {
    let probe = run.context::<Probe>()?;
    let state = probe.row(input.before).await.map(|r| r.state);
    if state != Some(JobState::Done) {
        probe.world.history().violated(
            Invariant::DependenciesFirst,
            format!(
                "run {} of sim.after started while its dependency was {state:?}",
                run.run_id()
            ),
        );
    }
    Ok(())
}

/// Payments: a balanced posting per key and tenant, written once through the store's book.
#[ledger(name = "sim.payments", tenant = per_tenant, book = driver)]
pub struct SimPayment;

/// A payment of `amount` cents to `key` in `tenant`'s ledger.
fn payment(key: u64, tenant: &str, amount: i64) -> Posting {
    posting!(format!("pay:{key}"), [
        "assets:cash" => (amount) EUR,
        "income:sales" => (-amount) EUR,
    ])
    .for_tenant(tenant)
}

/// The input of `sim.tick`: the task and occurrence that fired it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TickInput {
    /// The task.
    pub task: String,
    /// The occurrence, RFC 3339.
    pub at: String,
}

#[job(name = "sim.tick", key = "tick:{task}:{at}", tenant = none)]
async fn sim_tick(_run: Run, _input: TickInput) -> Result<(), JobError> {
    Ok(())
}

fn tick(task: &str, at: &Occurrence) -> Vec<Entry> {
    vec![Entry::of::<SimTick>(TickInput {
        task: task.to_string(),
        at: at.at().to_rfc3339(),
    })]
}

// Four tasks every minute: each occurrence is a fire the scheduler must make exactly once.

#[task(cron = "* * * * *", tz = "UTC")]
fn sim_minutely_a(at: Occurrence) -> Vec<Entry> {
    tick("a", &at)
}

#[task(cron = "* * * * *", tz = "UTC")]
fn sim_minutely_b(at: Occurrence) -> Vec<Entry> {
    tick("b", &at)
}

#[task(cron = "* * * * *", tz = "UTC")]
fn sim_minutely_c(at: Occurrence) -> Vec<Entry> {
    tick("c", &at)
}

#[task(cron = "* * * * *", tz = "UTC")]
fn sim_minutely_d(at: Occurrence) -> Vec<Entry> {
    tick("d", &at)
}

/// A process's client over its own view of the store, on a clock started now.
fn client(world: &Arc<World>, name: &str, offset: &Offset) -> Jobs {
    let elapsed = turmoil::sim_elapsed().unwrap_or_default();
    let clock = Arc::new(SimClock::start(elapsed, offset.clone()));
    Jobs::with_clock(Arc::new(FaultyStore::new(world.clone(), name)), clock)
}

type Software = std::pin::Pin<Box<dyn std::future::Future<Output = turmoil::Result>>>;

/// A worker process: three slots, a short visibility timeout so a stalled one loses its claims
/// within a run, and a clock skew allowance of `skew` (how far apart the fleet's clocks are).
pub fn worker(
    world: Arc<World>,
    name: &'static str,
    offset: Offset,
    skew: Duration,
) -> impl Fn() -> Software {
    move || {
        let (world, offset) = (world.clone(), offset.clone());
        Box::pin(async move {
            let jobs = client(&world, name, &offset);
            let worker = jobs
                .worker()
                .concurrency(3)
                .visibility_timeout(Duration::from_secs(5))
                .clock_skew(skew)
                .idle_poll_max(Duration::from_secs(1))
                .shutdown_deadline(Duration::from_secs(2))
                .context(Arc::new(Probe {
                    world: world.clone(),
                    jobs: jobs.clone(),
                }))
                .build()?;
            let _running = worker.start();
            std::future::pending::<()>().await;
            Ok(())
        })
    }
}

/// A scheduler process (one of a leader and its standby): a short lease, so a crashed leader's
/// standby takes over within a run.
pub fn scheduler(world: Arc<World>, name: &'static str, offset: Offset) -> impl Fn() -> Software {
    move || {
        let (world, offset) = (world.clone(), offset.clone());
        Box::pin(async move {
            let jobs = client(&world, name, &offset);
            let scheduler = jobs
                .scheduler()
                .lease_ttl(Duration::from_secs(6))
                .tick_interval(Duration::from_millis(500))
                .build()?;
            let _running = scheduler.start();
            std::future::pending::<()>().await;
            Ok(())
        })
    }
}

/// A producer process: enqueues until the run has `target` accepted jobs (single enqueues,
/// batches, keyed jobs of two tenants, capped jobs), noting each one the store acknowledged.
pub fn producer(
    world: Arc<World>,
    name: &'static str,
    offset: Offset,
    target: u32,
) -> impl Fn() -> Software {
    move || {
        let (world, offset) = (world.clone(), offset.clone());
        Box::pin(async move {
            let jobs = client(&world, name, &offset);
            loop {
                if world.history().stats.accepted >= u64::from(target) {
                    std::future::pending::<()>().await;
                }
                let (pause, pick, n, flaky, nap, k, tenant, dwell) = world.draw(|rng| {
                    (
                        rng.random_range(50..1_500u64),
                        rng.random_range(0..16u32),
                        rng.random::<u32>() as u64,
                        if rng.random_bool(0.3) {
                            rng.random_range(1..3u32)
                        } else {
                            0
                        },
                        rng.random_bool(0.3),
                        rng.random_range(0..3u32),
                        if rng.random_bool(0.5) {
                            "acme"
                        } else {
                            "globex"
                        },
                        rng.random_range(0..2_500u64),
                    )
                });
                tokio::time::sleep(Duration::from_millis(pause)).await;
                let work = |n: u64| WorkInput {
                    n,
                    flaky,
                    nap,
                    dwell,
                };
                let answers = match pick {
                    0..=4 => jobs.enqueue::<SimWork>(work(n)).await.map(|e| vec![e]),
                    5 | 6 => {
                        jobs.enqueue_many::<SimWork, _>((0..3).map(|i| work(n + i)))
                            .await
                    }
                    7 | 8 => {
                        let input = KeyedInput {
                            account: tenant.to_string(),
                            k,
                        };
                        jobs.enqueue::<SimKeyed>(input).await.map(|e| vec![e])
                    }
                    9 => jobs
                        .enqueue::<SimCapped>(CappedInput { n })
                        .await
                        .map(|e| vec![e]),
                    10 => jobs
                        .enqueue::<SimFanout>(FanoutInput { n })
                        .await
                        .map(|e| vec![e]),
                    12 => jobs
                        .enqueue::<SimWaiter>(WaiterInput { n, k })
                        .await
                        .map(|e| vec![e]),
                    13 => {
                        // An event, not a job: nothing to count as accepted.
                        let _ = jobs.publish_event("sim.go", &format!("k{k}"), &n).await;
                        continue;
                    }
                    14 => batch(&world, &jobs, n).await,
                    15 => {
                        after(
                            &jobs,
                            n,
                            WorkInput {
                                n,
                                flaky,
                                nap,
                                dwell,
                            },
                        )
                        .await
                    }
                    _ => {
                        let posting = payment(n % 50, tenant, 100 + (n % 900) as i64);
                        jobs.enqueue::<SimPayment>(posting).await.map(|e| vec![e])
                    }
                };
                let Ok(answers) = answers else { continue };
                let mut history = world.history();
                for answer in answers {
                    if !answer.deduped {
                        let name = jobs_name(pick);
                        history
                            .accepted
                            .insert(answer.id, Accepted { name: name.into() });
                        history.stats.accepted += 1;
                    }
                }
            }
        })
    }
}

/// Retries `call` up to five times, as an application would on an error.
async fn retried<T, F, Fut>(mut call: F) -> Result<T, JobError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, JobError>>,
{
    let mut last = None;
    for _ in 0..5 {
        match call().await {
            Ok(value) => return Ok(value),
            Err(error) => last = Some(error),
        }
    }
    Err(last.expect("five tries"))
}

/// Opens a batch, adds three members, closes it, each call retried as an application would;
/// answers the callback once the batch is closed. A retry refused because the first try
/// half-happened is a violation.
async fn batch(world: &World, jobs: &Jobs, n: u64) -> Result<Vec<jobs::Enqueued>, JobError> {
    let opened = retried(|| jobs.batch::<SimBatchDone>(BatchInput { n })).await;
    let batch = match opened {
        Ok(batch) => batch,
        Err(error) => {
            if error.code() == Some(jobs::ErrorCode::JobDuplicate) {
                world.history().violated(
                    Invariant::RetriesConverge,
                    format!(
                        "opening batch {n} again after an error was refused: {:?}",
                        error.code()
                    ),
                );
            }
            return Err(error);
        }
    };
    retried(|| batch.add::<SimMember, _>((0..3).map(|i| MemberInput { n, i }))).await?;
    retried(|| batch.close()).await?;
    Ok(vec![jobs::Enqueued {
        id: batch.callback(),
        run_id: Default::default(),
        deduped: false,
    }])
}

/// Enqueues a `sim.work` and a `sim.after` that depends on it.
async fn after(jobs: &Jobs, n: u64, work: WorkInput) -> Result<Vec<jobs::Enqueued>, JobError> {
    let before = jobs.enqueue::<SimWork>(work).await?;
    let options = jobs::EnqueueOptions::new().depends_on([before.id]);
    let after = jobs
        .enqueue_with::<SimAfter>(
            AfterInput {
                n,
                before: before.id,
            },
            options,
        )
        .await?;
    Ok(vec![after])
}

fn jobs_name(pick: u32) -> &'static str {
    match pick {
        0..=6 => "sim.work",
        7 | 8 => "sim.keyed",
        9 => "sim.capped",
        10 => "sim.fanout",
        12 => "sim.waiter",
        14 => "sim.batch_done",
        15 => "sim.after",
        _ => "sim.payments",
    }
}

/// An operator: now and then cancels a job, requeues a dead one, or pauses a queue a moment.
pub fn operator(world: Arc<World>, name: &'static str, offset: Offset) -> impl Fn() -> Software {
    move || {
        let (world, offset) = (world.clone(), offset.clone());
        Box::pin(async move {
            let jobs = client(&world, name, &offset);
            loop {
                let (pause, action, pick) = world.draw(|rng| {
                    (
                        rng.random_range(1_000..6_000u64),
                        rng.random_range(0..3u32),
                        rng.random::<u32>() as usize,
                    )
                });
                tokio::time::sleep(Duration::from_millis(pause)).await;
                if !world.faults_on() {
                    // The healing phase: the operator stands back.
                    continue;
                }
                let target = {
                    let history = world.history();
                    let ids: Vec<_> = history.accepted.keys().copied().collect();
                    (!ids.is_empty()).then(|| ids[pick % ids.len()])
                };
                let Some(id) = target else { continue };
                world.history().stats.operator_actions += 1;
                match action {
                    0 => {
                        let _ = jobs.cancel_with_reason(id, "simulated operator").await;
                    }
                    1 => {
                        if let Ok(Some(row)) = jobs.job(id).await {
                            if row.state == JobState::Dead {
                                let _ = jobs.operator().requeue(id, None).await;
                            }
                        }
                    }
                    _ => {
                        let operator = jobs.operator();
                        if operator.pause_queue("default").await.is_ok() {
                            tokio::time::sleep(Duration::from_millis(1_500)).await;
                            let _ = operator.resume_queue("default").await;
                        }
                    }
                }
            }
        })
    }
}
