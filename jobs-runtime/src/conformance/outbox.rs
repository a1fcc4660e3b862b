//! The outbox store's cases ([`OutboxStore`]), and the relay's over it: staging in a
//! transaction, the ordered, exclusive, fenced claim, the failure record, refusals, the purge,
//! the wake, and the relay's publish-once, in-order, stop-at-the-first-failure rules against a
//! job store. [`outbox_suite!`](crate::outbox_suite) expands one test per case for a
//! fixture factory: every store (memory, Postgres, SQLite) runs the same cases.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::{at, request};
use crate::clock::Timestamp;
use crate::driver::outbox::*;
use crate::driver::records::*;
use crate::driver::{
    EventFindParams, JobCancelParams, JobDriver, JobGetParams, MemoryDriver, QueueStatsParams,
    StepListParams, StepPutParams,
};
use crate::error::{ErrorCode, JobError};
use crate::outbox::OutboxRelay;
use crate::Jobs;

/// What an outbox case runs on: the store, and a way to stage in a transaction of its kind.
#[async_trait]
pub trait OutboxFixture: Send + Sync {
    /// The store under test.
    fn store(&self) -> Arc<dyn OutboxStore>;

    /// Stages `requests` through [`OutboxStore::outbox_stage`] in one transaction of the
    /// store's kind, then commits it (`commit`) or rolls it back.
    async fn stage(&self, requests: &[EnqueueRequest], commit: bool) -> Result<(), JobError>;
}

/// The memory store's fixture.
#[derive(Debug, Default)]
pub struct MemoryOutboxFixture {
    outbox: crate::driver::MemoryOutbox,
}

#[async_trait]
impl OutboxFixture for MemoryOutboxFixture {
    fn store(&self) -> Arc<dyn OutboxStore> {
        Arc::new(self.outbox.clone())
    }

    async fn stage(&self, requests: &[EnqueueRequest], commit: bool) -> Result<(), JobError> {
        let mut tx = self.outbox.begin();
        for request in requests {
            self.outbox.outbox_stage(&mut tx, request).await?;
        }
        if commit {
            tx.commit();
        }
        Ok(())
    }
}

/// The cases, in one list: `outbox_suite!` expands one test per entry.
#[doc(hidden)]
#[macro_export]
macro_rules! __outbox_cases {
    ($callback:ident ! { $($args:tt)* }) => {
        $crate::$callback! { @cases { $($args)* }
            outbox_stage_then_rollback_leaves_nothing_to_claim,
            outbox_claim_takes_committed_rows_in_stage_order,
            outbox_stage_round_trips_every_field,
            outbox_claim_takes_nothing_while_another_holder_s_claim_is_live,
            outbox_marks_are_fenced_on_the_holder,
            outbox_release_hands_rows_back_and_records_the_failure,
            outbox_claim_that_takes_nothing_leaves_the_lease_free,
            outbox_stats_name_the_lease_holder_and_its_last_claim,
            outbox_refused_rows_leave_the_backlog_and_are_kept,
            outbox_purge_deletes_settled_rows_before_the_cutoff_in_bounded_batches,
            outbox_stage_refuses_a_connection_of_another_kind,
            outbox_wake_signals_a_committed_stage,
            outbox_claim_never_hands_one_row_to_two_concurrent_relays,
            outbox_claim_after_a_position_takes_the_rows_after_it,
            outbox_published_then_claim_marks_and_takes_only_for_the_holder,
            relay_publishes_committed_rows_once_in_order_and_the_job_runs,
            relay_stops_at_the_first_failed_row_and_keeps_the_rest,
            relay_sets_aside_a_row_the_job_store_refuses_for_good,
            relay_re_publish_after_a_crash_meets_the_first_job,
            relay_two_relays_at_once_publish_each_row_once,
            relay_drain_publishes_every_batch_once_in_order,
            relay_drain_stops_at_a_failed_row_and_hands_back_the_batch_claimed_after_it,
            relay_two_relays_draining_at_once_publish_each_row_once,
        }
    };
}

/// Expands one `#[tokio::test]` per outbox case for a fixture factory (an expression, or
/// `|case| expr` naming the case for a schema or file of its own), as
/// [`conformance_suite!`](crate::conformance_suite) does for drivers.
#[macro_export]
macro_rules! outbox_suite {
    (@cases { $case_name:ident => $factory:expr } $($case:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                let $case_name: &'static str = ::core::stringify!($case);
                $crate::conformance::run_case($case_name, async move {
                    let fixture: ::std::sync::Arc<dyn $crate::conformance::outbox::OutboxFixture> =
                        $factory.await;
                    $crate::conformance::outbox::$case(fixture).await;
                })
                .await;
            }
        )*
    };
    (| $case_name:ident | $factory:expr $(,)?) => {
        $crate::__outbox_cases!(outbox_suite! { $case_name => $factory });
    };
    ($factory:expr $(,)?) => {
        $crate::__outbox_cases!(outbox_suite! { _case => $factory });
    };
}

const LEASE: Duration = Duration::from_secs(30);

/// A request staged at `secs` past the suite's epoch.
fn staged(key: &str, secs: i64) -> EnqueueRequest {
    let mut r = request("conformance.outbox", key);
    r.now = at(secs);
    r.run_at = at(secs);
    r
}

fn claim(holder: &str, limit: usize, now: Timestamp) -> OutboxClaimParams {
    OutboxClaimParams {
        holder: holder.to_string(),
        limit,
        lease: LEASE,
        now,
        after: None,
    }
}

fn settle(holder: &str, now: Timestamp) -> OutboxSettle<'_> {
    OutboxSettle { holder, now }
}

fn ids(records: &[OutboxRecord]) -> Vec<JobId> {
    records.iter().map(|r| r.request.id).collect()
}

async fn stage(fixture: &dyn OutboxFixture, requests: &[EnqueueRequest]) {
    fixture
        .stage(requests, true)
        .await
        .unwrap_or_else(|e| panic!("stage refused: {e}"));
}

async fn claim_ok(store: &dyn OutboxStore, params: &OutboxClaimParams) -> Vec<OutboxRecord> {
    store
        .outbox_claim(params)
        .await
        .unwrap_or_else(|e| panic!("claim refused: {e}"))
}

async fn stats(store: &dyn OutboxStore) -> OutboxStats {
    store.outbox_stats().await.expect("outbox stats")
}

fn published(records: &[OutboxRecord]) -> Vec<OutboxPublished> {
    records
        .iter()
        .map(|r| OutboxPublished {
            id: r.request.id,
            deduped: false,
        })
        .collect()
}

/// Rolled back, a staged row is gone; committed, it is the backlog.
pub async fn outbox_stage_then_rollback_leaves_nothing_to_claim(fixture: Arc<dyn OutboxFixture>) {
    let store = fixture.store();
    fixture
        .stage(&[staged("a", 0), staged("b", 1)], false)
        .await
        .expect("stage");
    assert!(claim_ok(&*store, &claim("r1", 10, at(5))).await.is_empty());
    assert_eq!(stats(&*store).await.backlog, 0);
    stage(&*fixture, &[staged("c", 2)]).await;
    let s = stats(&*store).await;
    assert_eq!(s.backlog, 1);
    assert_eq!(s.oldest_staged_at, Some(at(2)));
}

/// The claim takes committed rows in `(staged_at, id)` order, at most its limit.
pub async fn outbox_claim_takes_committed_rows_in_stage_order(fixture: Arc<dyn OutboxFixture>) {
    let store = fixture.store();
    let late = staged("late", 9);
    let early = staged("early", 1);
    // Two rows staged at one instant: the smaller id goes first.
    let mut tie = [staged("tie-a", 5), staged("tie-b", 5)];
    tie.sort_by_key(|r| std::cmp::Reverse(r.id));
    stage(&*fixture, &[late.clone(), early.clone()]).await;
    stage(&*fixture, &tie).await;
    let first = claim_ok(&*store, &claim("r1", 3, at(20))).await;
    let mut expected_tie = [tie[0].id, tie[1].id];
    expected_tie.sort();
    assert_eq!(
        ids(&first),
        vec![early.id, expected_tie[0], expected_tie[1]]
    );
    let rest = claim_ok(&*store, &claim("r1", 3, at(20))).await;
    // The same holder claims again from the head: its own rows and the next.
    assert_eq!(rest.len(), 3);
    assert_eq!(
        ids(&rest)[..3],
        [early.id, expected_tie[0], expected_tie[1]]
    );
    let all = claim_ok(&*store, &claim("r1", 10, at(20))).await;
    assert_eq!(ids(&all).last(), Some(&late.id));
}

/// Every field a stage carries comes back with the claim.
pub async fn outbox_stage_round_trips_every_field(fixture: Arc<dyn OutboxFixture>) {
    let store = fixture.store();
    let mut r = staged("full", 3);
    r.tenant_id = Some("acme".into());
    r.actor = Some("user:42".into());
    r.traceparent = Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into());
    r.on_conflict = ConflictPolicy::Error;
    r.max_attempts = 7;
    r.priority = MIN_PRIORITY;
    r.unique_for = Some(Duration::from_secs(3600));
    r.run_at = at(3600);
    r.queue = "billing".into();
    r.input = serde_json::json!({ "n": 1.5, "s": "é\u{1F600}", "list": [null, true] });
    stage(&*fixture, std::slice::from_ref(&r)).await;
    let got = claim_ok(&*store, &claim("r1", 1, at(10))).await;
    assert_eq!(got.len(), 1);
    let g = &got[0].request;
    assert_eq!(g.id, r.id);
    assert_eq!(g.run_id, r.run_id);
    assert_eq!(g.name, r.name);
    assert_eq!(g.queue, r.queue);
    assert_eq!(g.input, r.input);
    assert_eq!(g.idempotency_key, r.idempotency_key);
    assert_eq!(g.tenant_id, r.tenant_id);
    assert_eq!(g.max_attempts, 7);
    assert_eq!(g.priority, MIN_PRIORITY);
    assert_eq!(g.run_at, r.run_at);
    assert_eq!(g.on_conflict, ConflictPolicy::Error);
    assert_eq!(g.traceparent, r.traceparent);
    assert_eq!(g.actor, r.actor);
    assert_eq!(
        g.unique_for,
        Some(Duration::from_secs(3600)),
        "the unique period travels to the job store, which counts it from the job's creation"
    );
    assert_eq!(got[0].staged_at(), at(3));
    assert_eq!(got[0].publish_attempts, 0);
}

/// One relay at a time: while a claim on the head is live, another holder takes nothing; once
/// it lapses, the other takes the head over.
pub async fn outbox_claim_takes_nothing_while_another_holder_s_claim_is_live(
    fixture: Arc<dyn OutboxFixture>,
) {
    let store = fixture.store();
    stage(&*fixture, &[staged("a", 0), staged("b", 1), staged("c", 2)]).await;
    let a = claim_ok(&*store, &claim("r1", 2, at(10))).await;
    assert_eq!(a.len(), 2);
    assert!(claim_ok(&*store, &claim("r2", 10, at(11))).await.is_empty());
    // Still live one millisecond before the lease ends.
    let almost = at(10) + chrono::Duration::milliseconds(29_999);
    assert!(claim_ok(&*store, &claim("r2", 10, almost)).await.is_empty());
    let lapsed = at(41);
    let b = claim_ok(&*store, &claim("r2", 10, lapsed)).await;
    assert_eq!(b.len(), 3);
    assert_eq!(ids(&b)[..2], ids(&a)[..]);
}

/// `published`, `release` and `refused` change only the rows the caller still holds.
pub async fn outbox_marks_are_fenced_on_the_holder(fixture: Arc<dyn OutboxFixture>) {
    let store = fixture.store();
    stage(&*fixture, &[staged("a", 0), staged("b", 1)]).await;
    let old = claim_ok(&*store, &claim("r1", 2, at(10))).await;
    let new = claim_ok(&*store, &claim("r2", 2, at(50))).await;
    assert_eq!(ids(&old), ids(&new));
    let late = settle("r1", at(51));
    assert_eq!(
        store
            .outbox_published(&late, &published(&old))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .outbox_release(&late, &ids(&old), Some((old[0].request.id, "X_DRIVER")))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .outbox_refused(&late, old[1].request.id, "X_JOB_DUPLICATE")
            .await
            .unwrap(),
        0
    );
    let s = stats(&*store).await;
    assert_eq!((s.backlog, s.failing, s.refused, s.published), (2, 0, 0, 0));
    assert_eq!(
        store
            .outbox_published(&settle("r2", at(52)), &published(&new))
            .await
            .unwrap(),
        2
    );
    let s = stats(&*store).await;
    assert_eq!((s.backlog, s.published), (0, 2));
    // A mark repeated after it landed changes nothing.
    assert_eq!(
        store
            .outbox_published(&settle("r2", at(53)), &published(&new))
            .await
            .unwrap(),
        0
    );
}

/// A release hands the head back at once (frees the lease: any holder may claim it), and the
/// failed row's attempts and code are kept.
pub async fn outbox_release_hands_rows_back_and_records_the_failure(
    fixture: Arc<dyn OutboxFixture>,
) {
    let store = fixture.store();
    stage(&*fixture, &[staged("a", 0), staged("b", 1), staged("c", 2)]).await;
    let held = claim_ok(&*store, &claim("r1", 3, at(10))).await;
    // Row a was published; the publish of b failed, and b and c go back.
    store
        .outbox_published(&settle("r1", at(11)), &published(&held[..1]))
        .await
        .unwrap();
    let failed = held[1].request.id;
    let changed = store
        .outbox_release(
            &settle("r1", at(11)),
            &ids(&held)[1..],
            Some((failed, "X_DRIVER_UNAVAILABLE")),
        )
        .await
        .unwrap();
    assert_eq!(changed, 2);
    let s = stats(&*store).await;
    assert_eq!((s.backlog, s.failing, s.published), (2, 1, 1));
    assert_eq!(s.last_error_code.as_deref(), Some("X_DRIVER_UNAVAILABLE"));
    // Freed at once: r2 takes the head without waiting for r1's lease to lapse.
    let again = claim_ok(&*store, &claim("r2", 3, at(12))).await;
    assert_eq!(ids(&again), ids(&held)[1..]);
    let attempts: Vec<u32> = again.iter().map(|r| r.publish_attempts).collect();
    assert_eq!(attempts, vec![1, 0]);
    // A release by a holder that no longer holds the lease changes nothing.
    assert_eq!(
        store
            .outbox_release(&settle("r1", at(13)), &ids(&again), Some((failed, "X")))
            .await
            .unwrap(),
        0
    );
    assert!(claim_ok(&*store, &claim("r3", 3, at(14))).await.is_empty());
}

/// A claim that finds nothing leaves the lease free: an idle relay holds nothing, and another
/// takes the head as soon as rows come. So does a release with no rows.
pub async fn outbox_claim_that_takes_nothing_leaves_the_lease_free(
    fixture: Arc<dyn OutboxFixture>,
) {
    let store = fixture.store();
    stage(&*fixture, &[staged("a", 0)]).await;
    let a = claim_ok(&*store, &claim("r1", 5, at(10))).await;
    store
        .outbox_published(&settle("r1", at(11)), &published(&a))
        .await
        .unwrap();
    // r1 still holds the lease after its mark; its next claim finds nothing and frees it.
    assert!(claim_ok(&*store, &claim("r2", 5, at(12))).await.is_empty());
    assert!(claim_ok(&*store, &claim("r1", 5, at(13))).await.is_empty());
    stage(&*fixture, &[staged("b", 20)]).await;
    let b = claim_ok(&*store, &claim("r2", 5, at(14))).await;
    assert_eq!(b.len(), 1);
    // A release with no rows (a relay stopping) frees the lease too.
    assert_eq!(
        store
            .outbox_release(&settle("r2", at(15)), &[], None)
            .await
            .unwrap(),
        0
    );
    let again = claim_ok(&*store, &claim("r3", 5, at(16))).await;
    assert_eq!(ids(&again), ids(&b));
}

/// The stats name the relay holding the lease and when it last claimed: a claim stamps it, a
/// lapsed holder still shows (the reader judges the lapse) until another relay takes the lease
/// over, and a release or a claim that finds nothing clears it.
pub async fn outbox_stats_name_the_lease_holder_and_its_last_claim(
    fixture: Arc<dyn OutboxFixture>,
) {
    let store = fixture.store();
    let held = |holder: &str, secs: i64| {
        Some(OutboxLease {
            holder: holder.to_string(),
            claimed_at: at(secs),
        })
    };
    assert_eq!(stats(&*store).await.lease, None);
    stage(&*fixture, &[staged("a", 0), staged("b", 1)]).await;
    let a = claim_ok(&*store, &claim("r1", 1, at(10))).await;
    assert_eq!(stats(&*store).await.lease, held("r1", 10));
    store
        .outbox_published(&settle("r1", at(11)), &published(&a))
        .await
        .unwrap();
    let b = claim_ok(&*store, &claim("r1", 1, at(12))).await;
    assert_eq!(stats(&*store).await.lease, held("r1", 12));
    assert_eq!(
        store
            .outbox_release(&settle("r1", at(13)), &ids(&b), None)
            .await
            .unwrap(),
        1
    );
    assert_eq!(stats(&*store).await.lease, None);
    // r2 claims and goes quiet: its lease shows until r3 takes it over after the lapse.
    assert_eq!(claim_ok(&*store, &claim("r2", 1, at(20))).await.len(), 1);
    assert_eq!(stats(&*store).await.lease, held("r2", 20));
    let over = claim_ok(&*store, &claim("r3", 5, at(51))).await;
    assert_eq!(ids(&over), ids(&b));
    assert_eq!(stats(&*store).await.lease, held("r3", 51));
    store
        .outbox_published(&settle("r3", at(52)), &published(&over))
        .await
        .unwrap();
    assert!(claim_ok(&*store, &claim("r3", 5, at(53))).await.is_empty());
    assert_eq!(stats(&*store).await.lease, None);
}

/// A refused row leaves the backlog for good and is counted apart.
pub async fn outbox_refused_rows_leave_the_backlog_and_are_kept(fixture: Arc<dyn OutboxFixture>) {
    let store = fixture.store();
    stage(&*fixture, &[staged("a", 0), staged("b", 1)]).await;
    let held = claim_ok(&*store, &claim("r1", 2, at(10))).await;
    assert_eq!(
        store
            .outbox_refused(&settle("r1", at(11)), held[0].request.id, "X_JOB_DUPLICATE")
            .await
            .unwrap(),
        1
    );
    store
        .outbox_release(&settle("r1", at(11)), &ids(&held), None)
        .await
        .unwrap();
    let s = stats(&*store).await;
    assert_eq!((s.backlog, s.refused, s.published), (1, 1, 0));
    let next = claim_ok(&*store, &claim("r1", 2, at(12))).await;
    assert_eq!(ids(&next), vec![held[1].request.id]);
}

/// The purge deletes published and refused rows settled before its cutoff, at most its limit
/// a call, and never a row of the backlog.
pub async fn outbox_purge_deletes_settled_rows_before_the_cutoff_in_bounded_batches(
    fixture: Arc<dyn OutboxFixture>,
) {
    let store = fixture.store();
    let rows: Vec<EnqueueRequest> = (0..6).map(|i| staged(&format!("p{i}"), i)).collect();
    stage(&*fixture, &rows).await;
    let held = claim_ok(&*store, &claim("r1", 5, at(10))).await;
    store
        .outbox_published(&settle("r1", at(20)), &published(&held[..3]))
        .await
        .unwrap();
    store
        .outbox_refused(
            &settle("r1", at(20)),
            held[3].request.id,
            "X_LIMIT_EXCEEDED",
        )
        .await
        .unwrap();
    store
        .outbox_published(&settle("r1", at(40)), &published(&held[4..5]))
        .await
        .unwrap();
    assert_eq!(store.outbox_purge(at(20), 100).await.unwrap(), 0);
    assert_eq!(store.outbox_purge(at(30), 3).await.unwrap(), 3);
    assert_eq!(store.outbox_purge(at(30), 3).await.unwrap(), 1);
    assert_eq!(store.outbox_purge(at(30), 3).await.unwrap(), 0);
    let s = stats(&*store).await;
    assert_eq!((s.backlog, s.refused, s.published), (1, 0, 1));
}

/// A connection of another kind than the store's is refused, and nothing is staged.
pub async fn outbox_stage_refuses_a_connection_of_another_kind(fixture: Arc<dyn OutboxFixture>) {
    let store = fixture.store();
    let mut not_a_connection = 7_u32;
    let error = store
        .outbox_stage(&mut not_a_connection, &staged("x", 0))
        .await
        .expect_err("a foreign connection is refused");
    assert_eq!(error.code(), Some(ErrorCode::DriverUnavailable));
    assert_eq!(stats(&*store).await.backlog, 0);
}

/// A committed stage signals the store's wake (every built-in store has one).
pub async fn outbox_wake_signals_a_committed_stage(fixture: Arc<dyn OutboxFixture>) {
    let store = fixture.store();
    let mut wake = store
        .outbox_wake()
        .await
        .expect("the wake opens")
        .expect("a built-in store has a wake");
    // Wait until the wake is proven live, so the stage cannot slip in before it listens.
    let deadline = Duration::from_secs(20);
    tokio::time::timeout(deadline, async {
        while let Some(signal) = wake.recv().await {
            if signal == crate::driver::WakeSignal::Live {
                return;
            }
        }
        panic!("the wake closed before it was live");
    })
    .await
    .expect("the wake is proven live within 20 s");
    stage(&*fixture, &[staged("w", 0)]).await;
    tokio::time::timeout(deadline, async {
        while let Some(signal) = wake.recv().await {
            if matches!(signal, crate::driver::WakeSignal::Queue(_)) {
                return;
            }
        }
        panic!("the wake closed before it signalled");
    })
    .await
    .expect("a committed stage wakes the relay within 20 s");
}

/// Claims from several relays at once never hand one row to two of them.
pub async fn outbox_claim_never_hands_one_row_to_two_concurrent_relays(
    fixture: Arc<dyn OutboxFixture>,
) {
    let store = fixture.store();
    let rows: Vec<EnqueueRequest> = (0..40).map(|i| staged(&format!("c{i}"), i)).collect();
    stage(&*fixture, &rows).await;
    let mut tasks = Vec::new();
    for relay in 0..4 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let holder = format!("r{relay}");
            let mut mine = Vec::new();
            for round in 0..10 {
                let now = at(100 + round);
                let got = claim_ok(&*store, &claim(&holder, 5, now)).await;
                if got.is_empty() {
                    tokio::task::yield_now().await;
                    continue;
                }
                let n = store
                    .outbox_published(&settle(&holder, now), &published(&got))
                    .await
                    .unwrap();
                // Only what this holder still held is marked by it.
                mine.extend(ids(&got).into_iter().take(n as usize));
                if n as usize != got.len() {
                    panic!("holder {holder} claimed rows it could not mark");
                }
            }
            mine
        }));
    }
    let mut seen = HashSet::new();
    for task in tasks {
        for id in task.await.expect("relay task") {
            assert!(seen.insert(id), "row {id} was published by two relays");
        }
    }
    let s = stats(&*store).await;
    assert_eq!(s.published as usize, seen.len());
    assert_eq!(s.backlog as usize + seen.len(), 40);
}

/// A claim after a position (a pipelined relay's batches awaiting their marks) takes the rows
/// after it only; a row that committed late behind it waits for the next claim from the head,
/// which takes the holder's own unmarked rows again.
pub async fn outbox_claim_after_a_position_takes_the_rows_after_it(
    fixture: Arc<dyn OutboxFixture>,
) {
    let store = fixture.store();
    stage(
        &*fixture,
        &[
            staged("a", 0),
            staged("b", 2),
            staged("c", 3),
            staged("d", 4),
        ],
    )
    .await;
    let first = claim_ok(&*store, &claim("r1", 2, at(10))).await;
    let position = |records: &[OutboxRecord]| {
        let last = records.last().expect("a row");
        Some((last.staged_at(), last.request.id))
    };
    // A row staged at 1 commits late, behind the batch in flight.
    let late = staged("late", 1);
    stage(&*fixture, std::slice::from_ref(&late)).await;
    let next = claim_ok(
        &*store,
        &OutboxClaimParams {
            after: position(&first),
            ..claim("r1", 2, at(11))
        },
    )
    .await;
    assert_eq!(next.len(), 2);
    assert!(!ids(&next).contains(&late.id));
    // Nothing after the last batch: the holder keeps the lease, its batches still unmarked.
    let none = claim_ok(
        &*store,
        &OutboxClaimParams {
            after: position(&next),
            ..claim("r1", 2, at(12))
        },
    )
    .await;
    assert!(none.is_empty());
    assert!(claim_ok(&*store, &claim("r2", 10, at(13))).await.is_empty());
    // From the head: the holder's own unmarked rows, the late row in its place.
    let all = claim_ok(&*store, &claim("r1", 10, at(14))).await;
    let mut expected = vec![ids(&first)[0], late.id, ids(&first)[1]];
    expected.extend(ids(&next));
    assert_eq!(ids(&all), expected);
}

/// A draining relay's step between batches marks the batch it published and takes the rows
/// after the one it is publishing; once another relay took the lapsed lease over, the late
/// holder's step marks nothing and takes nothing.
pub async fn outbox_published_then_claim_marks_and_takes_only_for_the_holder(
    fixture: Arc<dyn OutboxFixture>,
) {
    let store = fixture.store();
    let rows: Vec<EnqueueRequest> = ["a", "b", "c", "d", "e", "f"]
        .iter()
        .zip(0..)
        .map(|(key, secs)| staged(key, secs))
        .collect();
    stage(&*fixture, &rows).await;
    let position = |records: &[OutboxRecord]| {
        let last = records.last().expect("a row");
        Some((last.staged_at(), last.request.id))
    };
    let first = claim_ok(&*store, &claim("r1", 2, at(10))).await;
    let second = claim_ok(
        &*store,
        &OutboxClaimParams {
            after: position(&first),
            ..claim("r1", 2, at(11))
        },
    )
    .await;
    let third = store
        .outbox_published_then_claim(
            &settle("r1", at(12)),
            &published(&first),
            &OutboxClaimParams {
                after: position(&second),
                ..claim("r1", 2, at(12))
            },
        )
        .await
        .unwrap();
    let staged_ids: Vec<JobId> = rows.iter().map(|r| r.id).collect();
    assert_eq!(ids(&first), staged_ids[..2]);
    assert_eq!(ids(&second), staged_ids[2..4]);
    assert_eq!(ids(&third), staged_ids[4..]);
    let s = stats(&*store).await;
    assert_eq!((s.backlog, s.published), (4, 2));
    // The lease lapses 30 s after r1's last claim: r2 takes the head over.
    let over = claim_ok(&*store, &claim("r2", 10, at(43))).await;
    assert_eq!(ids(&over), staged_ids[2..]);
    let late = store
        .outbox_published_then_claim(
            &settle("r1", at(44)),
            &published(&second),
            &OutboxClaimParams {
                after: position(&third),
                ..claim("r1", 2, at(44))
            },
        )
        .await
        .unwrap();
    assert!(late.is_empty(), "a lapsed holder takes nothing");
    let s = stats(&*store).await;
    assert_eq!(
        (s.backlog, s.published),
        (4, 2),
        "a lapsed holder marks nothing"
    );
}

// ---------------------------------------------------------------------------------------------
// The relay over the store, into a job store.

/// A client on a fresh memory job store, with the fixture's outbox installed.
fn target(fixture: &dyn OutboxFixture, driver: Arc<dyn JobDriver>) -> Jobs {
    let clock = Arc::new(crate::clock::TestClock::at(at(100)));
    Jobs::with_clock(driver, clock)
        .with_shared_outbox(fixture.store(), crate::outbox::OutboxMode::Optional)
}

fn relay(fixture: &dyn OutboxFixture, jobs: &Jobs, holder: &str, batch: usize) -> OutboxRelay {
    OutboxRelay::builder_shared(fixture.store(), jobs)
        .holder(holder)
        .batch(batch)
        .build()
        .expect("relay settings")
}

/// Committed rows are published once each, in stage order, and a published job is claimable.
pub async fn relay_publishes_committed_rows_once_in_order_and_the_job_runs(
    fixture: Arc<dyn OutboxFixture>,
) {
    let driver: Arc<dyn JobDriver> = Arc::new(MemoryDriver::new());
    let jobs = target(&*fixture, driver.clone());
    // Of one priority (not the default), so the claim's order below is the stage order; with
    // a unique period, which the job store counts from the publish (the job's creation).
    let rows: Vec<EnqueueRequest> = (0..5)
        .map(|i| EnqueueRequest {
            priority: 2,
            unique_for: Some(Duration::from_secs(60)),
            ..staged(&format!("j{i}"), i)
        })
        .collect();
    stage(&*fixture, &rows).await;
    fixture
        .stage(&[staged("rolled-back", 2)], false)
        .await
        .unwrap();
    let relay = relay(&*fixture, &jobs, "relay-a", 3);
    let first = relay.pass().await.expect("pass");
    assert_eq!((first.claimed, first.published, first.deduped), (3, 3, 0));
    let second = relay.pass().await.expect("pass");
    assert_eq!((second.claimed, second.published), (2, 2));
    assert_eq!(relay.pass().await.expect("pass").claimed, 0);
    for row in &rows {
        let job = driver
            .job_get(&JobGetParams { id: row.id })
            .await
            .unwrap()
            .expect("the staged id is the job's id");
        assert_eq!(job.run_id, row.run_id);
        assert_eq!(job.idempotency_key, row.idempotency_key);
        assert_eq!(job.priority, 2, "the outbox row carried its priority");
        assert_eq!(
            job.unique_until,
            Some(at(160)),
            "the period counts from the publish (at 100), not the stage"
        );
    }
    let stats = driver
        .queue_stats(&QueueStatsParams { now: at(1_000) })
        .await
        .unwrap();
    let total: u64 = stats.iter().map(|s| s.ready + s.delayed).sum();
    assert_eq!(total, 5, "the rolled-back stage published nothing");
    // The jobs are due in stage order: a claim of all of them answers that order.
    let claimed = driver
        .job_claim(&super::claim_params("w", 10, at(1_000)))
        .await
        .unwrap();
    let order: Vec<JobId> = claimed.jobs.iter().map(|j| j.id).collect();
    assert_eq!(order, rows.iter().map(|r| r.id).collect::<Vec<_>>());
    let s = stats_of(&*fixture).await;
    assert_eq!((s.backlog, s.published), (0, 5));
}

async fn stats_of(fixture: &dyn OutboxFixture) -> OutboxStats {
    stats(&*fixture.store()).await
}

/// A publish that fails at row k stops the pass: the rows before it are published, it and the
/// rows after it stay unpublished, released at once, and go in order on the next pass.
pub async fn relay_stops_at_the_first_failed_row_and_keeps_the_rest(
    fixture: Arc<dyn OutboxFixture>,
) {
    let failing = Arc::new(FailingTarget::default());
    let jobs = target(&*fixture, failing.clone());
    let rows: Vec<EnqueueRequest> = (0..6).map(|i| staged(&format!("k{i}"), i)).collect();
    stage(&*fixture, &rows).await;
    failing.fail(rows[2].id);
    let relay = relay(&*fixture, &jobs, "relay-a", 10);
    let report = relay.pass().await.expect("pass");
    assert_eq!(report.published, 2);
    assert_eq!(report.stopped_by.as_deref(), Some("X_DRIVER_UNAVAILABLE"));
    let s = stats_of(&*fixture).await;
    assert_eq!((s.backlog, s.failing, s.published), (4, 1, 2));
    for row in &rows[2..] {
        assert!(
            failing.get(row.id).await.is_none(),
            "a row after the failure was published"
        );
    }
    // Released at once: another relay may take the head straight away.
    failing.heal();
    let other = self::relay(&*fixture, &jobs, "relay-b", 10);
    let report = other.pass().await.expect("pass");
    assert_eq!((report.claimed, report.published), (4, 4));
    let order = failing.published_order();
    assert_eq!(order, rows.iter().map(|r| r.id).collect::<Vec<_>>());
}

/// A row the job store refuses for good (a held key under `error_on_duplicate`) is set aside,
/// and the rows after it still publish.
pub async fn relay_sets_aside_a_row_the_job_store_refuses_for_good(
    fixture: Arc<dyn OutboxFixture>,
) {
    let driver: Arc<dyn JobDriver> = Arc::new(MemoryDriver::new());
    let jobs = target(&*fixture, driver.clone());
    let mut holder = staged("held", 0);
    holder.now = at(100);
    driver.job_enqueue(&holder).await.unwrap();
    let mut dup = staged("held", 1);
    dup.on_conflict = ConflictPolicy::Error;
    let after = staged("after", 2);
    stage(&*fixture, &[dup.clone(), after.clone()]).await;
    let report = relay(&*fixture, &jobs, "relay-a", 10)
        .pass()
        .await
        .expect("pass");
    assert_eq!((report.published, report.refused), (1, 1));
    assert!(driver
        .job_get(&JobGetParams { id: dup.id })
        .await
        .unwrap()
        .is_none());
    assert!(driver
        .job_get(&JobGetParams { id: after.id })
        .await
        .unwrap()
        .is_some());
    let s = stats_of(&*fixture).await;
    assert_eq!((s.backlog, s.refused, s.published), (0, 1, 1));
}

/// A relay that published and died before marking leaves its rows claimed; once the claim
/// lapses, the next relay re-publishes them and the job store answers the first jobs: no
/// second job.
pub async fn relay_re_publish_after_a_crash_meets_the_first_job(fixture: Arc<dyn OutboxFixture>) {
    let driver: Arc<dyn JobDriver> = Arc::new(MemoryDriver::new());
    let jobs = target(&*fixture, driver.clone());
    let rows: Vec<EnqueueRequest> = (0..3).map(|i| staged(&format!("c{i}"), i)).collect();
    stage(&*fixture, &rows).await;
    let store = fixture.store();
    // The crashed relay: claimed, published, never marked.
    let held = claim_ok(&*store, &claim("crashed", 10, at(100))).await;
    let requests: Vec<EnqueueRequest> = held.iter().map(|r| r.request.clone()).collect();
    driver.job_enqueue_many(&requests).await.unwrap();
    let relay = relay(&*fixture, &jobs, "relay-b", 10);
    assert_eq!(
        relay.pass().await.unwrap().claimed,
        0,
        "the crashed claim is still live"
    );
    let later = Jobs::with_clock(
        driver.clone(),
        Arc::new(crate::clock::TestClock::at(at(100 + 31))),
    );
    let relay = self::relay(&*fixture, &later, "relay-b", 10);
    let report = relay.pass().await.unwrap();
    assert_eq!((report.published, report.deduped), (3, 3));
    let stats = driver
        .queue_stats(&QueueStatsParams { now: at(1_000) })
        .await
        .unwrap();
    assert_eq!(stats.iter().map(|s| s.ready + s.delayed).sum::<u64>(), 3);
}

/// Two relays passing at once publish every row, each once.
pub async fn relay_two_relays_at_once_publish_each_row_once(fixture: Arc<dyn OutboxFixture>) {
    two_relays_at_once(fixture, 7, false).await;
}

/// A drain claims, publishes and marks batch after batch until a short one, every row once and
/// in stage order, though each batch's mark runs beside the next batch's claim and publish.
pub async fn relay_drain_publishes_every_batch_once_in_order(fixture: Arc<dyn OutboxFixture>) {
    let counting = Arc::new(FailingTarget::default());
    let jobs = target(&*fixture, counting.clone());
    let rows: Vec<EnqueueRequest> = (0..23).map(|i| staged(&format!("d{i}"), i)).collect();
    stage(&*fixture, &rows).await;
    let relay = relay(&*fixture, &jobs, "relay-a", 5);
    let report = relay.drain().await.expect("drain");
    assert_eq!(
        (report.claimed, report.published, report.deduped),
        (23, 23, 0)
    );
    assert_eq!(report.stopped_by, None);
    assert_eq!(
        counting.published_order(),
        rows.iter().map(|r| r.id).collect::<Vec<_>>()
    );
    let s = stats_of(&*fixture).await;
    assert_eq!((s.backlog, s.published), (0, 23));
    assert_eq!(relay.drain().await.expect("drain").claimed, 0);
}

/// A drain whose publish fails at row k stops there: the rows before k are marked, k and the
/// rest of its batch are released, and so is the batch it had already claimed after it, so the
/// next relay takes the head at once and publishes the rest in order.
pub async fn relay_drain_stops_at_a_failed_row_and_hands_back_the_batch_claimed_after_it(
    fixture: Arc<dyn OutboxFixture>,
) {
    let failing = Arc::new(FailingTarget::default());
    let jobs = target(&*fixture, failing.clone());
    let rows: Vec<EnqueueRequest> = (0..12).map(|i| staged(&format!("f{i}"), i)).collect();
    stage(&*fixture, &rows).await;
    failing.fail(rows[7].id);
    let report = relay(&*fixture, &jobs, "relay-a", 5)
        .drain()
        .await
        .expect("drain");
    assert_eq!(report.published, 7);
    assert_eq!(report.stopped_by.as_deref(), Some("X_DRIVER_UNAVAILABLE"));
    let s = stats_of(&*fixture).await;
    assert_eq!((s.backlog, s.failing, s.published), (5, 1, 7));
    for row in &rows[7..] {
        assert!(
            failing.get(row.id).await.is_none(),
            "a row after the failure was published"
        );
    }
    failing.heal();
    let report = relay(&*fixture, &jobs, "relay-b", 5)
        .drain()
        .await
        .expect("drain");
    assert_eq!((report.claimed, report.published), (5, 5));
    assert_eq!(
        failing.published_order(),
        rows.iter().map(|r| r.id).collect::<Vec<_>>()
    );
}

/// Two relays draining at once publish every row once, in stage order.
pub async fn relay_two_relays_draining_at_once_publish_each_row_once(
    fixture: Arc<dyn OutboxFixture>,
) {
    two_relays_at_once(fixture, 4, true).await;
}

/// Two relays at once over 60 rows, in batches of `batch`, by passes or by drains: every row
/// published once, in stage order.
async fn two_relays_at_once(fixture: Arc<dyn OutboxFixture>, batch: usize, drain: bool) {
    let counting = Arc::new(FailingTarget::default());
    let jobs = target(&*fixture, counting.clone());
    let rows: Vec<EnqueueRequest> = (0..60).map(|i| staged(&format!("t{i}"), i)).collect();
    stage(&*fixture, &rows).await;
    let mut tasks = Vec::new();
    for name in ["relay-a", "relay-b"] {
        let relay = relay(&*fixture, &jobs, name, batch);
        tasks.push(tokio::spawn(async move {
            for _ in 0..40 {
                if drain {
                    relay.drain().await.expect("drain");
                } else {
                    relay.pass().await.expect("pass");
                }
                tokio::task::yield_now().await;
            }
        }));
    }
    for task in tasks {
        task.await.expect("relay task");
    }
    let order = counting.published_order();
    assert_eq!(order.len(), 60, "every row published once: {}", order.len());
    assert_eq!(order, rows.iter().map(|r| r.id).collect::<Vec<_>>());
    assert_eq!(stats_of(&*fixture).await.backlog, 0);
}

/// A job store that records every enqueue it takes, in order, and fails the enqueue of chosen
/// ids (as a store that went away does), for the relay cases.
#[derive(Debug, Default)]
struct FailingTarget {
    inner: MemoryDriver,
    failing: Mutex<HashSet<JobId>>,
    order: Mutex<Vec<JobId>>,
}

impl FailingTarget {
    fn fail(&self, id: JobId) {
        self.failing.lock().unwrap().insert(id);
    }

    fn heal(&self) {
        self.failing.lock().unwrap().clear();
    }

    /// Ids in the order they were first inserted.
    fn published_order(&self) -> Vec<JobId> {
        self.order.lock().unwrap().clone()
    }

    async fn get(&self, id: JobId) -> Option<JobRecord> {
        self.inner.job_get(&JobGetParams { id }).await.unwrap()
    }

    fn check(&self, requests: &[EnqueueRequest]) -> Result<(), JobError> {
        let failing = self.failing.lock().unwrap();
        if requests.iter().any(|r| failing.contains(&r.id)) {
            return Err(JobError::new(
                ErrorCode::DriverUnavailable,
                "the job store is unreachable (a test's fault)",
            ));
        }
        Ok(())
    }

    fn record(&self, results: &[EnqueueResult]) {
        let mut order = self.order.lock().unwrap();
        order.extend(results.iter().filter(|r| !r.deduped).map(|r| r.id));
    }
}

#[async_trait]
impl JobDriver for FailingTarget {
    fn name(&self) -> &'static str {
        "failing-memory"
    }
    async fn job_enqueue(&self, request: &EnqueueRequest) -> Result<EnqueueResult, JobError> {
        self.check(std::slice::from_ref(request))?;
        let result = self.inner.job_enqueue(request).await?;
        self.record(&[result]);
        Ok(result)
    }
    async fn job_enqueue_many(
        &self,
        requests: &[EnqueueRequest],
    ) -> Result<Vec<EnqueueResult>, JobError> {
        self.check(requests)?;
        let results = self.inner.job_enqueue_many(requests).await?;
        self.record(&results);
        Ok(results)
    }
    async fn job_claim(&self, params: &ClaimParams) -> Result<ClaimResult, JobError> {
        self.inner.job_claim(params).await
    }
    async fn job_ack(&self, params: &AckParams) -> Result<bool, JobError> {
        self.inner.job_ack(params).await
    }
    async fn job_nack(&self, params: &NackParams) -> Result<bool, JobError> {
        self.inner.job_nack(params).await
    }
    async fn job_purge(&self, params: &JobPurgeParams) -> Result<u64, JobError> {
        self.inner.job_purge(params).await
    }
    async fn job_heartbeat(&self, params: &HeartbeatParams) -> Result<bool, JobError> {
        self.inner.job_heartbeat(params).await
    }
    async fn job_progress(&self, params: &ProgressParams) -> Result<bool, JobError> {
        self.inner.job_progress(params).await
    }
    async fn job_release_pending(&self, now: Timestamp) -> Result<(), JobError> {
        self.inner.job_release_pending(now).await
    }
    async fn job_links(&self, id: JobId) -> Result<JobLinks, JobError> {
        self.inner.job_links(id).await
    }
    async fn job_get(&self, params: &JobGetParams) -> Result<Option<JobRecord>, JobError> {
        self.inner.job_get(params).await
    }
    async fn job_cancel(&self, params: &JobCancelParams) -> Result<JobRecord, JobError> {
        self.inner.job_cancel(params).await
    }
    async fn job_group_join(&self, params: &GroupJoinParams<'_>) -> Result<GroupRecord, JobError> {
        self.inner.job_group_join(params).await
    }
    async fn job_group_get(&self, group: GroupId) -> Result<Option<GroupRecord>, JobError> {
        self.inner.job_group_get(group).await
    }
    async fn job_group_members(
        &self,
        params: &GroupMembersParams,
    ) -> Result<Vec<GroupMember>, JobError> {
        self.inner.job_group_members(params).await
    }
    async fn job_group_wake(
        &self,
        params: &GroupWakeParams,
    ) -> Result<Option<GroupRecord>, JobError> {
        self.inner.job_group_wake(params).await
    }
    async fn queue_stats(&self, params: &QueueStatsParams) -> Result<Vec<QueueStats>, JobError> {
        self.inner.queue_stats(params).await
    }
    async fn step_list(&self, params: &StepListParams) -> Result<Vec<StepRecord>, JobError> {
        self.inner.step_list(params).await
    }
    async fn step_put(&self, params: &StepPutParams<'_>) -> Result<bool, JobError> {
        self.inner.step_put(params).await
    }
    async fn event_publish(&self, event: &EventPublish) -> Result<EventId, JobError> {
        self.inner.event_publish(event).await
    }
    async fn event_purge(&self, params: &EventPurgeParams) -> Result<u64, JobError> {
        self.inner.event_purge(params).await
    }
    async fn event_mark(&self) -> Result<String, JobError> {
        self.inner.event_mark().await
    }
    async fn event_find(&self, params: &EventFindParams<'_>) -> Result<Option<JobEvent>, JobError> {
        self.inner.event_find(params).await
    }
}
