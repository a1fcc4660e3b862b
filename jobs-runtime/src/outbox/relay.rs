//! [`OutboxRelay`]: claims committed outbox rows in stage order, as a lease, and publishes them
//! through the job store's own batched enqueue.
//!
//! One pass: claim up to a batch (taking the outbox's lease for this relay in the statement
//! that reads the rows), publish the batch in one `job_enqueue_many`, mark it published. When the batch
//! call fails, the rows are published one at a time in order, and the first that fails stops
//! the pass: the rows before it are marked, it and every row after it are released at once, so
//! nothing overtakes it. The job's id is the row's: a relay that crashed between publishing and
//! marking re-publishes, and the job store answers the first job (`deduped`), never a second.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::client::Jobs;
use crate::clock::Timestamp;
use crate::driver::outbox::*;
use crate::driver::records::{EnqueueRequest, EnqueueResult, JobId};
use crate::driver::WakeSignal;
use crate::error::{ErrorCode, JobError};

/// Rows a pass claims at most.
pub const DEFAULT_OUTBOX_BATCH: usize = 500;
/// Full batches a drain publishes before it ends (the run loop starts the next at once, from
/// the head, so a row that committed late behind the batches in flight waits at most this
/// many batches).
pub const DRAIN_BATCHES: usize = 20;
/// The wait between passes while there is work (a pass that emptied a full batch goes again
/// at once).
pub const DEFAULT_OUTBOX_INTERVAL: Duration = Duration::from_millis(200);
/// The idle wait's ceiling while the store's wake is proven live: 12 claims a minute.
pub const DEFAULT_OUTBOX_IDLE_MAX: Duration = Duration::from_secs(5);
/// The idle wait's ceiling with no live wake (the poll is all there is): 30 claims a minute.
pub const DEFAULT_OUTBOX_IDLE_MAX_WITHOUT_WAKE: Duration = Duration::from_secs(2);

/// Codes a job store refuses one row with for good: publishing it again would fail again, so
/// the row is set aside (refused, kept with its code) rather than stopping the outbox behind it.
/// Every other failure (the store down, a timeout) stops the pass and the row is retried.
const REFUSALS: &[ErrorCode] = &[
    ErrorCode::JobDuplicate,
    ErrorCode::LimitExceeded,
    ErrorCode::ValueUnstorable,
];

/// A batch a drain published and has not marked yet: when it was settled, its rows and what the
/// job store answered.
type Unmarked = (Timestamp, Vec<EnqueueRequest>, Vec<EnqueueResult>);

/// Builds an [`OutboxRelay`]; every setting is checked by [`OutboxRelayBuilder::build`].
#[derive(Debug)]
pub struct OutboxRelayBuilder {
    store: Arc<dyn OutboxStore>,
    jobs: Jobs,
    batch: usize,
    interval: Duration,
    idle_max: Duration,
    idle_max_without_wake: Duration,
    lease: Duration,
    holder: Option<String>,
}

impl OutboxRelayBuilder {
    /// Rows a pass claims and publishes at most (default [`DEFAULT_OUTBOX_BATCH`]).
    pub fn batch(mut self, rows: usize) -> Self {
        self.batch = rows;
        self
    }

    /// Full batches a drain publishes before it ends (the run loop starts the next at once, from
    /// the head, so a row that committed late behind the batches in flight waits at most this
    /// many batches).
    pub const DRAIN_BATCHES: usize = 20;
    /// The wait between passes while there is work (default [`DEFAULT_OUTBOX_INTERVAL`]).
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// The idle wait's ceilings, with a live wake and without one (defaults
    /// [`DEFAULT_OUTBOX_IDLE_MAX`] and [`DEFAULT_OUTBOX_IDLE_MAX_WITHOUT_WAKE`]).
    pub fn idle_max(mut self, with_wake: Duration, without_wake: Duration) -> Self {
        self.idle_max = with_wake;
        self.idle_max_without_wake = without_wake;
        self
    }

    /// How long a claim holds its rows before another relay may take them over (default
    /// [`DEFAULT_OUTBOX_CLAIM_LEASE`], 30 s): a positive whole number of milliseconds, else
    /// `X_INVARIANT` at [`build`](Self::build).
    pub fn claim_lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// This relay's holder id (default `relay:<uuid>`): unique per running relay, never reused.
    pub fn holder(mut self, holder: impl Into<String>) -> Self {
        self.holder = Some(holder.into());
        self
    }

    /// Checks the settings and builds the relay.
    pub fn build(self) -> Result<OutboxRelay, JobError> {
        let whole_ms = |d: Duration| !d.is_zero() && d.subsec_nanos().is_multiple_of(1_000_000);
        if !whole_ms(self.lease) {
            return Err(JobError::new(
                ErrorCode::Invariant,
                "the outbox relay's claim lease is not a positive whole number of milliseconds",
            )
            .with_fix("leave the default (30 s) or pass a positive whole number of milliseconds"));
        }
        for (what, value) in [
            ("interval", self.interval),
            ("idle_max", self.idle_max),
            ("idle_max without a wake", self.idle_max_without_wake),
        ] {
            if value.is_zero() {
                return Err(JobError::new(
                    ErrorCode::Invariant,
                    format!("the outbox relay's `{what}` is zero"),
                )
                .with_fix("give it a positive duration"));
            }
        }
        if self.batch == 0 {
            return Err(JobError::new(
                ErrorCode::Invariant,
                "the outbox relay's batch is zero rows",
            )
            .with_fix("claim at least one row a pass"));
        }
        let holder = self
            .holder
            .unwrap_or_else(|| format!("relay:{}", crate::entropy::new_id()));
        if holder.is_empty() || holder.len() > 200 || holder.chars().any(char::is_control) {
            return Err(JobError::new(
                ErrorCode::Invariant,
                "the outbox relay's holder id is empty, longer than 200 bytes, or holds a control character",
            )
            .with_fix("leave the default holder id, or pass a short printable one"));
        }
        Ok(OutboxRelay {
            inner: Arc::new(Inner {
                store: self.store,
                jobs: self.jobs,
                batch: self.batch,
                interval: self.interval,
                idle_max: self.idle_max,
                idle_max_without_wake: self.idle_max_without_wake,
                lease: self.lease,
                holder,
            }),
        })
    }
}

/// The outbox relay: publishes committed outbox rows to the job store of a [`Jobs`] client.
///
/// Run it with [`OutboxRelay::start`] (or let a worker run it: `WorkerBuilder::outbox_relay`),
/// or pass by pass with [`OutboxRelay::pass`] in a test. See the module for the guarantees.
#[derive(Debug, Clone)]
pub struct OutboxRelay {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: Arc<dyn OutboxStore>,
    jobs: Jobs,
    batch: usize,
    interval: Duration,
    idle_max: Duration,
    idle_max_without_wake: Duration,
    lease: Duration,
    holder: String,
}

/// What one pass (or one [`drain`](OutboxRelay::drain)) did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassReport {
    /// Rows claimed.
    pub claimed: usize,
    /// Rows published (a deduped one included).
    pub published: usize,
    /// Of those, rows the job store already held (a re-publish, or a live key).
    pub deduped: usize,
    /// Rows the job store refused for good (kept, never published).
    pub refused: usize,
    /// The code of the failure that stopped the pass, when one did.
    pub stopped_by: Option<String>,
}

impl OutboxRelay {
    /// A relay from `store` into the job store `jobs` runs on, with the defaults.
    pub fn builder(store: impl OutboxStore, jobs: &Jobs) -> OutboxRelayBuilder {
        Self::builder_shared(Arc::new(store), jobs)
    }

    /// [`OutboxRelay::builder`] over a shared store.
    pub fn builder_shared(store: Arc<dyn OutboxStore>, jobs: &Jobs) -> OutboxRelayBuilder {
        OutboxRelayBuilder {
            store,
            jobs: jobs.clone(),
            batch: DEFAULT_OUTBOX_BATCH,
            interval: DEFAULT_OUTBOX_INTERVAL,
            idle_max: DEFAULT_OUTBOX_IDLE_MAX,
            idle_max_without_wake: DEFAULT_OUTBOX_IDLE_MAX_WITHOUT_WAKE,
            lease: DEFAULT_OUTBOX_CLAIM_LEASE,
            holder: None,
        }
    }

    /// This relay's holder id.
    pub fn holder(&self) -> &str {
        &self.inner.holder
    }

    /// The outbox store it reads.
    pub fn store(&self) -> &Arc<dyn OutboxStore> {
        &self.inner.store
    }

    /// One pass: claim a batch, publish it in order, mark what was published and release the
    /// rest at the first failure.
    pub async fn pass(&self) -> Result<PassReport, JobError> {
        let inner = &*self.inner;
        let rows = self.claim(None).await?;
        let mut report = PassReport {
            claimed: rows.len(),
            ..PassReport::default()
        };
        if rows.is_empty() {
            return Ok(report);
        }
        let (settle_at, requests) = self.requests(rows);
        let settle = self.settle(settle_at);
        match inner.jobs.driver().job_enqueue_many(&requests).await {
            Ok(results) => {
                self.mark(&settle, &requests, &results, &mut report).await?;
            }
            Err(_) => self.one_by_one(&settle, &requests, &mut report).await?,
        }
        if report.published > 0 {
            inner.jobs.local_wake().notify_waiters();
        }
        Ok(report)
    }

    /// Passes back to back until a claim comes back short of a full batch (or
    /// [`DRAIN_BATCHES`] went), pipelined: while a batch is published, the batch before it is
    /// marked and the next one claimed after it, in one call of the outbox store
    /// ([`OutboxStore::outbox_published_then_claim`]: one statement on Postgres), so the outbox's
    /// statements overlap the job store's. Order holds as in [`pass`](Self::pass): a batch is
    /// published only after the one before it was, and a failed publish releases its tail (and
    /// with it the lease) and leaves the batch claimed after it unpublished. A row that
    /// committed late behind the batches in flight is taken by the next drain, which starts
    /// from the head. The report sums the batches.
    pub async fn drain(&self) -> Result<PassReport, JobError> {
        self.drain_until(&CancellationToken::new()).await
    }

    /// [`drain`](Self::drain), claiming no further batch once `stop` is cancelled.
    async fn drain_until(&self, stop: &CancellationToken) -> Result<PassReport, JobError> {
        let inner = &*self.inner;
        let mut report = PassReport::default();
        let mut rows = self.claim(None).await?;
        // The batch published last, awaiting its mark: when it was settled, its rows and what
        // the job store answered.
        let mut unmarked: Option<Unmarked> = None;
        let mut batches = 0;
        while !rows.is_empty() {
            batches += 1;
            report.claimed += rows.len();
            let go_on =
                rows.len() == inner.batch && batches < DRAIN_BATCHES && !stop.is_cancelled();
            let position = rows.last().map(|r| (r.staged_at(), r.request.id));
            let (settle_at, requests) = self.requests(rows);
            let mut marks = PassReport::default();
            let (published, next) = tokio::join!(
                inner.jobs.driver().job_enqueue_many(&requests),
                self.mark_then_claim(unmarked.take(), go_on.then_some(position), &mut marks),
            );
            report.published += marks.published;
            report.deduped += marks.deduped;
            let settle = self.settle(settle_at);
            match published {
                Ok(results) => {
                    inner.jobs.local_wake().notify_waiters();
                    unmarked = Some((settle_at, requests, results));
                }
                Err(_) => {
                    // Nothing claimed after this batch may overtake it: this one is published row
                    // by row up to its first failure, whose release frees the lease, and the
                    // next batch is left unpublished for the next claim from the head.
                    self.one_by_one(&settle, &requests, &mut report).await?;
                    if report.published > 0 {
                        inner.jobs.local_wake().notify_waiters();
                    }
                    next?;
                    return Ok(report);
                }
            }
            // On an error, the rows left unmarked are published again by the next claim from
            // the head, and the job store answers their first jobs.
            rows = next?;
        }
        self.mark_unmarked(unmarked, &mut report).await?;
        Ok(report)
    }

    /// Marks the batch a drain published last, if there is one, and claims the rows after
    /// `after` when it is given: one call of the store when both are due
    /// ([`OutboxStore::outbox_published_then_claim`]), so the outbox's database makes one commit
    /// between two batches, not two.
    async fn mark_then_claim(
        &self,
        unmarked: Option<Unmarked>,
        after: Option<Option<(Timestamp, JobId)>>,
        report: &mut PassReport,
    ) -> Result<Vec<OutboxRecord>, JobError> {
        match (unmarked, after) {
            (Some((at, requests, results)), Some(after)) => {
                let published = published_rows(&requests, &results);
                let rows = self
                    .inner
                    .store
                    .outbox_published_then_claim(
                        &self.settle(at),
                        &published,
                        &self.claim_params(after),
                    )
                    .await?;
                report.count(&published);
                Ok(rows)
            }
            (unmarked, after) => {
                self.mark_unmarked(unmarked, report).await?;
                match after {
                    Some(after) => self.claim(after).await,
                    None => Ok(Vec::new()),
                }
            }
        }
    }

    /// Marks the batch a drain published last, if there is one.
    async fn mark_unmarked(
        &self,
        unmarked: Option<Unmarked>,
        report: &mut PassReport,
    ) -> Result<(), JobError> {
        match unmarked {
            Some((at, requests, results)) => {
                self.mark(&self.settle(at), &requests, &results, report)
                    .await
            }
            None => Ok(()),
        }
    }

    /// This relay's changes to its claim, settled at `now`.
    fn settle(&self, now: Timestamp) -> OutboxSettle<'_> {
        OutboxSettle {
            holder: &self.inner.holder,
            now,
        }
    }

    /// A claim for this relay: the head, or the rows after `after`.
    fn claim_params(&self, after: Option<(Timestamp, JobId)>) -> OutboxClaimParams {
        let inner = &*self.inner;
        OutboxClaimParams {
            holder: inner.holder.clone(),
            limit: inner.batch,
            lease: inner.lease,
            now: inner.jobs.now(),
            after,
        }
    }

    /// Claims for this relay: the head, or the rows after `after`.
    async fn claim(
        &self,
        after: Option<(Timestamp, JobId)>,
    ) -> Result<Vec<OutboxRecord>, JobError> {
        self.inner
            .store
            .outbox_claim(&self.claim_params(after))
            .await
    }

    /// The claimed rows as the enqueues to publish, stamped with the clock's now (which the
    /// marks are settled at).
    fn requests(&self, rows: Vec<OutboxRecord>) -> (Timestamp, Vec<EnqueueRequest>) {
        let now = self.inner.jobs.now();
        let requests = rows
            .into_iter()
            .map(|row| EnqueueRequest { now, ..row.request })
            .collect();
        (now, requests)
    }

    /// After a failed batch call: each row in order, stopping at the first that fails.
    async fn one_by_one(
        &self,
        settle: &OutboxSettle<'_>,
        requests: &[EnqueueRequest],
        report: &mut PassReport,
    ) -> Result<(), JobError> {
        let store = &self.inner.store;
        for (at, request) in requests.iter().enumerate() {
            match self.inner.jobs.driver().job_enqueue(request).await {
                Ok(result) => {
                    self.mark(settle, std::slice::from_ref(request), &[result], report)
                        .await?;
                }
                Err(error) if error.code().is_some_and(|c| REFUSALS.contains(&c)) => {
                    let code = error.code().map_or("", |c| c.as_str());
                    tracing::warn!(target: "jobs.outbox.refused", job_id = %request.id, job = %request.name, code, "the job store refused an outbox row for good; it is kept, unpublished");
                    store.outbox_refused(settle, request.id, code).await?;
                    report.refused += 1;
                }
                Err(error) => {
                    let code = error.code().map_or("X_DRIVER", |c| c.as_str());
                    let rest: Vec<_> = requests[at..].iter().map(|r| r.id).collect();
                    store
                        .outbox_release(settle, &rest, Some((request.id, code)))
                        .await?;
                    tracing::warn!(target: "jobs.outbox.publish-failed", job_id = %request.id, code, held_back = rest.len(), "an outbox row failed to publish; it and the rows after it wait for the next pass");
                    report.stopped_by = Some(code.to_string());
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    async fn mark(
        &self,
        settle: &OutboxSettle<'_>,
        requests: &[EnqueueRequest],
        results: &[EnqueueResult],
        report: &mut PassReport,
    ) -> Result<(), JobError> {
        let published = published_rows(requests, results);
        self.inner
            .store
            .outbox_published(settle, &published)
            .await?;
        report.count(&published);
        Ok(())
    }

    /// Starts the relay loop on the tokio runtime: a [`drain`](Self::drain) at once (it goes
    /// again at once after each full batch), the next after the interval while there is work, and idle after a doubling wait up to the
    /// ceiling, cut short by the store's wake.
    pub fn start(&self) -> RelayHandle {
        let stop = CancellationToken::new();
        let task = tokio::spawn(self.clone().run(stop.clone()));
        RelayHandle {
            relay: self.clone(),
            stop,
            task,
        }
    }

    async fn run(self, stop: CancellationToken) {
        let inner = &*self.inner;
        let clock = inner.jobs.clock().clone();
        let mut wake = match inner.store.outbox_wake().await {
            Ok(wake) => wake,
            Err(error) => {
                tracing::warn!(target: "jobs.outbox.wake-unavailable", %error, "the outbox's wake could not be opened; polling only");
                None
            }
        };
        let mut live = false;
        let mut idle = inner.interval;
        while !stop.is_cancelled() {
            let ceiling = if live {
                inner.idle_max
            } else {
                inner.idle_max_without_wake
            };
            // A drain claims again at once after each full batch, and returns after a short one.
            let wait = match self.drain_until(&stop).await {
                Ok(report) if report.stopped_by.is_none() && report.claimed > 0 => {
                    idle = inner.interval;
                    inner.interval
                }
                Ok(report) => {
                    if report.claimed == 0 {
                        tracing::trace!(target: "jobs.outbox.idle", "nothing to publish");
                    }
                    let wait = idle.min(ceiling);
                    idle = (idle * 2).min(ceiling);
                    wait
                }
                Err(error) => {
                    tracing::warn!(target: "jobs.outbox.tick-failed", %error, "an outbox pass failed; the relay tries again");
                    let wait = idle.min(ceiling);
                    idle = (idle * 2).min(ceiling);
                    wait
                }
            };
            let sleep = clock.sleep(wait);
            tokio::pin!(sleep);
            loop {
                tokio::select! {
                    biased;
                    _ = stop.cancelled() => return,
                    _ = &mut sleep => break,
                    signal = recv(&mut wake) => match signal {
                        Some(WakeSignal::Live) => live = true,
                        Some(WakeSignal::Lost) => live = false,
                        Some(WakeSignal::Queue(_)) => {
                            idle = inner.interval;
                            break;
                        }
                        Some(WakeSignal::Due { .. }) => {}
                        None => wake = None,
                    },
                }
            }
        }
    }
}

/// The rows of a published batch, with what the job store answered for each.
fn published_rows(requests: &[EnqueueRequest], results: &[EnqueueResult]) -> Vec<OutboxPublished> {
    requests
        .iter()
        .zip(results)
        .map(|(request, result)| OutboxPublished {
            id: request.id,
            deduped: result.deduped,
        })
        .collect()
}

impl PassReport {
    /// Counts a marked batch.
    fn count(&mut self, published: &[OutboxPublished]) {
        self.published += published.len();
        self.deduped += published.iter().filter(|p| p.deduped).count();
    }
}

/// The next wake signal; pending forever when there is no wake.
async fn recv(wake: &mut Option<crate::driver::WakeReceiver>) -> Option<WakeSignal> {
    match wake {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// A running relay ([`OutboxRelay::start`]).
#[derive(Debug)]
pub struct RelayHandle {
    relay: OutboxRelay,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl RelayHandle {
    /// The relay.
    pub fn relay(&self) -> &OutboxRelay {
        &self.relay
    }

    /// Stops the relay: no pass starts after this, and the pass in flight is joined if it ends
    /// within `deadline` (on the client's clock), then the outbox's lease is freed; past it the
    /// pass is abandoned, and its lease lapses for another relay to take over. Await it before
    /// closing the outbox's database. Answers whether the pass in flight (if any) ended in time.
    pub async fn stop(self, deadline: Duration) -> bool {
        self.stop.cancel();
        let clock = self.relay.inner.jobs.clock().clone();
        let mut task = self.task;
        tokio::select! {
            biased;
            _ = &mut task => {
                // Hand the head back, so another relay need not wait for the lease to lapse.
                let settle = self.relay.settle(self.relay.inner.jobs.now());
                if let Err(error) = self.relay.inner.store.outbox_release(&settle, &[], None).await {
                    tracing::warn!(target: "jobs.outbox.release-failed", %error, "the stopped relay could not free the outbox's lease; it lapses for another relay");
                }
                true
            }
            _ = clock.sleep(deadline) => {
                task.abort();
                tracing::warn!(target: "jobs.outbox.stop-deadline", "the outbox pass in flight outlived the stop deadline; its claim lapses for another relay");
                false
            }
        }
    }
}
