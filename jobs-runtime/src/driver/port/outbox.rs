//! The transactional outbox's store: jobs staged in the application's own database, in the
//! caller's transaction, and the relay's fenced, ordered claims over them.
//!
//! An outbox store lives in the app's database, which need not be the one the jobs run on: the
//! relay ([`crate::outbox::OutboxRelay`]) publishes its committed rows through the job store's
//! own enqueue, so a Postgres or SQLite app can feed memory, SQLite, Postgres or Redis. The
//! built-in stores are [`MemoryOutbox`](crate::driver::MemoryOutbox) (for tests: its
//! transactions are [`MemoryOutboxTx`](crate::driver::MemoryOutboxTx)),
//! `PostgresOutbox` and `SqliteOutbox`.
//!
//! Every store keeps the same rules, which the outbox conformance cases check:
//!
//! - a row is staged on the caller's connection and exists only if that transaction commits;
//! - [`OutboxStore::outbox_claim`] takes the outbox's lease (one per outbox: the holder, the
//!   time and the last row taken) and answers the first rows not yet published or failed, in
//!   the total order `(staged_at, id)`, in the same statement or transaction; it takes nothing
//!   while another holder's lease has not lapsed (`claimed_at + lease > now`), so one relay at
//!   a time publishes and nothing overtakes a batch in flight; it passes over the rows in
//!   at or before [`OutboxClaimParams::after`] (the caller's own batches awaiting their marks),
//!   and a claim from the head that takes nothing leaves the lease free;
//! - [`OutboxStore::outbox_published`], [`OutboxStore::outbox_release`] and
//!   [`OutboxStore::outbox_refused`] change rows only while the caller holds the lease: a
//!   lapsed relay's late call, after another took the lease over, changes nothing;
//!   `outbox_release` also frees the lease;
//! - published rows are kept (the audit trail) until [`OutboxStore::outbox_purge`].

use std::time::Duration;

use async_trait::async_trait;

use super::caller_tx::CallerConn;
use super::records::{EnqueueRequest, JobId};
use super::WakeReceiver;
use crate::clock::Timestamp;
use crate::error::JobError;

/// How long a relay's lease on the outbox's head lasts, from its latest claim, before another
/// relay may take it over.
pub const DEFAULT_OUTBOX_CLAIM_LEASE: Duration = Duration::from_secs(30);

/// One claim of the relay.
#[derive(Debug, Clone)]
pub struct OutboxClaimParams {
    /// Who claims (one relay instance: unique, never reused).
    pub holder: String,
    /// Rows at most.
    pub limit: usize,
    /// How long the claim holds the lease.
    pub lease: Duration,
    /// The clock's now.
    pub now: Timestamp,
    /// A pipelined relay's position: the last row of the batches it published and has not
    /// marked yet (it marks one batch while it claims and publishes the next). The claim takes
    /// only rows after it in `(staged_at, id)`; a row that committed late behind it waits for
    /// the next claim from the head. `None`: from the head.
    pub after: Option<(Timestamp, JobId)>,
}

impl OutboxClaimParams {
    /// The position a claim from the head starts after: before every row.
    pub fn start_of_time() -> (Timestamp, JobId) {
        (
            chrono::DateTime::from_timestamp(-62_135_596_800, 0).expect("0001-01-01 is a time"),
            JobId::nil(),
        )
    }

    /// Leases taken after this instant are live: another holder's lease taken then keeps
    /// every claimer off the head. Every store judges a claim by it.
    pub fn live_after(&self) -> Timestamp {
        crate::clock::sub(self.now, self.lease)
    }
}

/// A staged row, as a claim hands it to the relay.
#[derive(Debug, Clone)]
pub struct OutboxRecord {
    /// The enqueue as it was staged; its `now` is the time it was staged.
    pub request: EnqueueRequest,
    /// Failed publishes so far.
    pub publish_attempts: u32,
}

impl OutboxRecord {
    /// When the row was staged.
    pub fn staged_at(&self) -> Timestamp {
        self.request.now
    }
}

/// What the job store answered for one published row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutboxPublished {
    /// The staged row (and job) id.
    pub id: JobId,
    /// `true` when the job store inserted nothing: the id was already stored (a re-publish
    /// after a crash) or a live job held the key.
    pub deduped: bool,
}

impl OutboxPublished {
    /// The ids of `rows`, and of those the job store already held: the two lists a mark binds.
    pub fn ids_and_deduped(rows: &[OutboxPublished]) -> (Vec<JobId>, Vec<JobId>) {
        let ids = rows.iter().map(|r| r.id).collect();
        let deduped = rows.iter().filter(|r| r.deduped).map(|r| r.id).collect();
        (ids, deduped)
    }
}

/// A change the relay makes to the rows of its claim.
#[derive(Debug, Clone)]
pub struct OutboxSettle<'a> {
    /// The holder that must still hold the outbox's lease.
    pub holder: &'a str,
    /// The clock's now.
    pub now: Timestamp,
}

/// The outbox as an operator sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutboxStats {
    /// Rows staged and committed, not yet published nor refused.
    pub backlog: u64,
    /// When the oldest of them was staged.
    pub oldest_staged_at: Option<Timestamp>,
    /// Backlog rows whose last publish failed (they are retried).
    pub failing: u64,
    /// The code of the newest failure among them.
    pub last_error_code: Option<String>,
    /// Rows the job store refused for good (never published; kept for the operator).
    pub refused: u64,
    /// Published rows kept as the audit trail.
    pub published: u64,
    /// The relay holding the outbox's lease, and when it last claimed; `None` while no relay
    /// holds it. A holder whose last claim is older than its relay's lease (by default
    /// [`DEFAULT_OUTBOX_CLAIM_LEASE`]) has lapsed: the next relay's claim takes the lease over.
    pub lease: Option<OutboxLease>,
}

/// Who holds the outbox's lease (one relay at a time publishes), as [`OutboxStats`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxLease {
    /// The relay's holder id (`OutboxRelayBuilder::holder`; by default `relay:<uuid>`).
    pub holder: String,
    /// The store's now at the holder's latest claim: its lease runs from then.
    pub claimed_at: Timestamp,
}

impl OutboxLease {
    /// The lease from a stored holder and claim time; `None` when either is absent (freed).
    pub fn of(holder: Option<String>, claimed_at: Option<Timestamp>) -> Option<OutboxLease> {
        Some(OutboxLease {
            holder: holder?,
            claimed_at: claimed_at?,
        })
    }
}

impl std::fmt::Debug for dyn OutboxStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OutboxStore({})", self.name())
    }
}

/// The store of the transactional outbox; see the module's rules.
#[async_trait]
pub trait OutboxStore: Send + Sync + 'static {
    /// A short name for logs (`memory`, `postgres`, `sqlite`).
    fn name(&self) -> &'static str;

    /// Stages `request` on the caller's connection: the row exists if and only if the
    /// caller's transaction commits. A connection of another kind than the store's is refused
    /// with [`foreign_connection`](super::caller_tx::foreign_connection)'s `X_DRIVER_UNAVAILABLE`.
    /// A store with a push wake announces the row on commit, unless a committed row is already
    /// waiting unclaimed.
    async fn outbox_stage(
        &self,
        conn: CallerConn<'_>,
        request: &EnqueueRequest,
    ) -> Result<(), JobError>;

    /// Takes the lease and answers the head of the outbox for `params.holder`, in
    /// `(staged_at, id)` order; empty while another holder's lease has not lapsed.
    async fn outbox_claim(&self, params: &OutboxClaimParams)
        -> Result<Vec<OutboxRecord>, JobError>;

    /// Marks the rows published, with what the job store answered; answers how many it changed.
    async fn outbox_published(
        &self,
        settle: &OutboxSettle<'_>,
        rows: &[OutboxPublished],
    ) -> Result<u64, JobError>;

    /// A pipelined relay's step between batches: marks `rows` published as
    /// [`outbox_published`](Self::outbox_published) does, and claims the rows after
    /// `claim.after` as [`outbox_claim`](Self::outbox_claim) does, for `settle.holder` (which is
    /// `claim.holder`). A store may do both in one statement; this default makes the two calls.
    /// A holder that no longer holds the lease does neither: it marks nothing and takes
    /// nothing (the next claim from the head starts afresh).
    async fn outbox_published_then_claim(
        &self,
        settle: &OutboxSettle<'_>,
        rows: &[OutboxPublished],
        claim: &OutboxClaimParams,
    ) -> Result<Vec<OutboxRecord>, JobError> {
        published_then_claim_in_two(self, settle, rows, claim).await
    }

    /// Hands the head back at once: frees the lease, and answers how many of `ids` are still
    /// unpublished. `failed`, when given, is the row whose publish failed and the failure's
    /// code: its attempts go up by one and the code is kept. With no ids, it only frees the
    /// lease (a relay stopping).
    async fn outbox_release(
        &self,
        settle: &OutboxSettle<'_>,
        ids: &[JobId],
        failed: Option<(JobId, &str)>,
    ) -> Result<u64, JobError>;

    /// Marks a row the job store refused for good (a terminal code: a held key under
    /// `error_on_duplicate`, a limit): never published, kept for the operator with its code.
    async fn outbox_refused(
        &self,
        settle: &OutboxSettle<'_>,
        id: JobId,
        code: &str,
    ) -> Result<u64, JobError>;

    /// The outbox as an operator sees it.
    async fn outbox_stats(&self) -> Result<OutboxStats, JobError>;

    /// Deletes published and refused rows settled before `before`, at most `limit`; answers
    /// how many went.
    async fn outbox_purge(&self, before: Timestamp, limit: u32) -> Result<u64, JobError>;

    /// A push wake, when the store has one: a signal each time a staged row commits (or may
    /// have), and whether the wake is proven live. `None`: the relay's poll is all there is.
    async fn outbox_wake(&self) -> Result<Option<WakeReceiver>, JobError> {
        Ok(None)
    }
}

/// [`OutboxStore::outbox_published_then_claim`] as two calls: the mark, then the claim unless
/// the mark changed fewer rows than it was given (only a holder that lost the lease marks short:
/// within its lease no one else settles its rows).
pub async fn published_then_claim_in_two<S: OutboxStore + ?Sized>(
    store: &S,
    settle: &OutboxSettle<'_>,
    rows: &[OutboxPublished],
    claim: &OutboxClaimParams,
) -> Result<Vec<OutboxRecord>, JobError> {
    let marked = store.outbox_published(settle, rows).await?;
    if marked < rows.len() as u64 {
        return Ok(Vec::new());
    }
    store.outbox_claim(claim).await
}
