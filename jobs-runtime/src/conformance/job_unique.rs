//! Unique periods (`#[job(unique(for = ".."))]`, [`EnqueueRequest::unique_for`]): a job holds
//! its key from its creation until the period ends, finished or not; an enqueue of the key
//! within it answers the job, one after it makes a new job; a lapsed mark blocks nothing; the
//! requeue verbs and a scheduler fire keep the same rule, keys stay per tenant, and the purge
//! frees a key with the row it deletes.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::driver::introspect::{JobBulkParams, JobIntrospection, JobRequeueParams};
use crate::driver::{JobCancelParams, JobGetParams};

/// The period the cases declare: one hour.
const HOUR: Duration = Duration::from_secs(3600);

/// A due request for `key` created at `now`, holding its key for `period` after that.
fn unique_at(key: &str, now: Timestamp, period: Option<Duration>) -> EnqueueRequest {
    EnqueueRequest {
        run_at: now,
        now,
        unique_for: period,
        ..request("conformance.unique", key)
    }
}

/// How a case finishes its job.
#[derive(Debug, Clone, Copy)]
enum End {
    Done,
    Failed,
    Dead,
    Cancelled,
}

/// Claims `id` (the one due job of the queue) and settles it as `end`, at `now`.
async fn finish(d: &dyn JobDriver, id: JobId, end: End, now: Timestamp) {
    if let End::Cancelled = end {
        d.job_cancel(&JobCancelParams {
            reason: None,
            id,
            now,
            actor: None,
        })
        .await
        .unwrap_or_else(|e| panic!("cancel failed: {e}"));
        return;
    }
    let job = claim_one(d, "w1", now).await;
    assert_eq!(job.id, id, "the case's job is the one due");
    let landed = match end {
        End::Done => ack(d, job.id, &job.by, now).await,
        End::Failed => nack(d, &nack_params(id, &job.by, NackTarget::Fail, now, now)).await,
        _ => {
            nack(
                d,
                &nack_params(id, &job.by, NackTarget::DeadLetter, now, now),
            )
            .await
        }
    };
    assert!(landed, "the settle of {end:?} landed");
}

/// Asserts the enqueue of `request` answered `holder`'s ids, deduped, and stored nothing new.
async fn assert_answered(d: &dyn JobDriver, request: &EnqueueRequest, holder: &EnqueueRequest) {
    let result = enqueue(d, request).await;
    assert_eq!(
        result,
        EnqueueResult {
            id: holder.id,
            run_id: holder.run_id,
            deduped: true,
        },
        "the holder of `{}` answers",
        request.idempotency_key
    );
    assert_eq!(
        d.job_get(&JobGetParams { id: request.id }).await.unwrap(),
        None,
        "a dedupe inserts no row"
    );
}

fn operator(d: &dyn JobDriver) -> &dyn JobIntrospection {
    d.introspect().unwrap_or_else(|| {
        panic!(
            "the `{}` driver has no introspection: the requeue cases need one",
            d.name()
        )
    })
}

/// Within its period a finished holder (done, failed, dead or cancelled) answers an enqueue of
/// its key with its own ids, deduped, under every conflict policy's rule: the default answers
/// it, `ConflictPolicy::Error` refuses with `X_JOB_DUPLICATE`, a debounce (`Replace`) answers
/// it and leaves it as it ended. Keys stay per tenant: the holder never answers another one.
pub async fn job_unique_period_answers_a_finished_holder(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    for (n, end) in [End::Done, End::Failed, End::Dead, End::Cancelled]
        .into_iter()
        .enumerate()
    {
        let key = format!("k-{end:?}");
        let start = at(n as i64 * 7200);
        let holder = unique_at(&key, start, Some(HOUR));
        assert!(!enqueue(d, &holder).await.deduped);
        finish(d, holder.id, end, start).await;
        let ended = get(d, holder.id).await;
        assert!(!ended.state.is_live(), "{end:?} finished the holder");

        // Half an hour on, with or without a period of its own, the holder answers.
        let later = add(start, Duration::from_secs(1800));
        assert_answered(d, &unique_at(&key, later, Some(HOUR)), &holder).await;
        assert_answered(d, &unique_at(&key, later, None), &holder).await;
        let mut refused = unique_at(&key, later, None);
        refused.on_conflict = ConflictPolicy::Error;
        assert_refused(d.job_enqueue(&refused).await, ErrorCode::JobDuplicate);
        let mut debounced = unique_at(&key, later, Some(HOUR));
        debounced.on_conflict = ConflictPolicy::Replace;
        debounced.run_at = add(later, Duration::from_secs(5));
        assert_answered(d, &debounced, &holder).await;
        assert_eq!(
            get(d, holder.id).await,
            ended,
            "an answered holder is left as it ended"
        );

        // Another tenant's key is another key.
        let mut elsewhere = unique_at(&key, later, None);
        elsewhere.tenant_id = Some("elsewhere".into());
        let result = enqueue(d, &elsewhere).await;
        assert!(
            !result.deduped && result.id == elsewhere.id,
            "a holder in another tenant never answers"
        );
        d.job_cancel(&JobCancelParams {
            reason: None,
            id: elsewhere.id,
            now: later,
            actor: None,
        })
        .await
        .unwrap();
    }
}

/// The period is measured from the holder's creation: an enqueue one second before its end is
/// answered, one at its end or after makes a new job (which holds the key by its own rules),
/// and a live holder answers as always, whether its period has ended or not.
pub async fn job_unique_period_ends_at_creation_plus_the_period(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let holder = unique_at("k", t0(), Some(HOUR));
    enqueue(d, &holder).await;
    assert_eq!(
        get(d, holder.id).await.unique_until,
        Some(at(3600)),
        "stored as its creation plus the period"
    );
    // Live and past its period: still answered, as any live holder is.
    assert_answered(d, &unique_at("k", at(7200), None), &holder).await;
    finish(d, holder.id, End::Done, at(7200)).await;
    // Done at 2h, created at 0: its period (from creation) has ended.
    let next = unique_at("k", at(7200), Some(HOUR));
    let result = enqueue(d, &next).await;
    assert!(
        !result.deduped && result.id == next.id,
        "the period counts from the holder's creation, not its end"
    );
    finish(d, next.id, End::Done, at(7210)).await;
    assert_answered(d, &unique_at("k", at(7200 + 3599), None), &next).await;
    let after = unique_at("k", at(7200 + 3600), None);
    let result = enqueue(d, &after).await;
    assert!(
        !result.deduped && result.id == after.id,
        "at creation plus the period the key is free"
    );
    assert_eq!(get(d, after.id).await.unique_until, None, "no period");
    // Without a period of its own, the new job frees the key once it finishes.
    finish(d, after.id, End::Done, at(7200 + 3601)).await;
    let free = unique_at("k", at(7200 + 3602), None);
    assert!(!enqueue(d, &free).await.deduped);
    assert_eq!(
        stats_of(d, QUEUE, at(7200 + 3602)).await.ready,
        1,
        "one job due: the last"
    );
}

/// A finished row whose period lapsed blocks nothing: the next enqueue of its key inserts, in
/// one call and in a batch, and keeps inserting once that row has been passed over. A batch
/// answers a holder inside its period, and files each new job's own period.
pub async fn job_unique_lapsed_marks_block_nothing_and_batches_keep_the_rule(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let mut held = Vec::new();
    for key in ["held", "lapsed-one", "lapsed-batch"] {
        let holder = unique_at(key, t0(), Some(HOUR));
        enqueue(d, &holder).await;
        finish(d, holder.id, End::Done, t0()).await;
        held.push(holder);
    }
    // At 2h, "held" is re-held by a job created at 1h30.
    let rehold = unique_at("held", at(5400), Some(HOUR));
    assert!(
        !enqueue(d, &rehold).await.deduped,
        "the first period lapsed"
    );
    finish(d, rehold.id, End::Done, at(5400)).await;

    let one = unique_at("lapsed-one", at(7200), None);
    let result = enqueue(d, &one).await;
    assert!(!result.deduped && result.id == one.id, "a lapsed mark");
    finish(d, one.id, End::Done, at(7200)).await;

    let now = at(7200);
    let batch = vec![
        unique_at("held", now, Some(HOUR)),
        unique_at("lapsed-batch", now, Some(HOUR)),
        unique_at("fresh", now, Some(HOUR)),
        unique_at("fresh", now, None),
        unique_at("lapsed-one", now, None),
    ];
    let results = d.job_enqueue_many(&batch).await.unwrap();
    let answered = |i: usize| (results[i].id, results[i].deduped);
    assert_eq!(answered(0), (rehold.id, true), "held inside its period");
    assert_eq!(answered(1), (batch[1].id, false), "past a lapsed mark");
    assert_eq!(answered(2), (batch[2].id, false), "a new key");
    assert_eq!(answered(3), (batch[2].id, true), "repeated in the batch");
    assert_eq!(answered(4), (batch[4].id, false), "freed once finished");
    assert_eq!(
        get(d, batch[1].id).await.unique_until,
        Some(add(now, HOUR)),
        "a batch row stores its period's end"
    );
    assert_eq!(get(d, batch[4].id).await.unique_until, None);
    assert_eq!(stats_of(d, QUEUE, now).await.ready, 3);

    // The batch's new jobs hold their keys for their own periods once they finish.
    let due = claim(d, &claim_params("w1", 10, now)).await;
    assert_eq!(due.jobs.len(), 3);
    for job in &due.jobs {
        assert!(ack(d, job.id, &job.by, now).await);
    }
    let later = at(7200 + 60);
    assert_answered(d, &unique_at("lapsed-batch", later, None), &batch[1]).await;
    assert_answered(d, &unique_at("fresh", later, None), &batch[2]).await;
    let unmarked = unique_at("lapsed-one", later, None);
    assert!(
        !enqueue(d, &unmarked).await.deduped,
        "a batch job without a period frees its key when it finishes"
    );
}

/// The requeue verbs keep the rule: a finished job comes back unless another job holds its key
/// (a live one, or a finished one inside its period, which refuses as a live one does); its
/// own period is no obstacle to itself; a lapsed period of another row blocks nothing. The bulk
/// requeue leaves a row whose key a period holds.
pub async fn job_unique_requeue_keeps_the_holders_of_a_period(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = operator(d);
    let requeue = |id, now| JobRequeueParams {
        id,
        from_step: None,
        now,
        actor: None,
    };
    // An old job of the key, dead, then a newer one holding the key for an hour, done.
    let old = unique_at("k", t0(), None);
    enqueue(d, &old).await;
    finish(d, old.id, End::Dead, t0()).await;
    let newer = unique_at("k", at(10), Some(HOUR));
    assert!(!enqueue(d, &newer).await.deduped);
    finish(d, newer.id, End::Done, at(10)).await;

    assert_refused(
        p.job_requeue(&requeue(old.id, at(20))).await,
        ErrorCode::JobDuplicate,
    );
    assert_eq!(
        get(d, old.id).await.state,
        JobState::Dead,
        "left as it ended"
    );
    let bulk = |now| JobBulkParams {
        state: JobState::Dead,
        queue: None,
        name: None,
        tenant_id: None,
        actor: None,
        now,
    };
    let moved = p.job_requeue_many(&bulk(at(20))).await.unwrap();
    assert_eq!(
        (moved.affected, moved.remaining),
        (0, 0),
        "a key held for a period stays put in bulk"
    );

    // The holder itself comes back: its own mark is no obstacle, and it holds the key again.
    let back = p.job_requeue(&requeue(newer.id, at(30))).await.unwrap();
    assert_eq!(back.state, JobState::Ready);
    assert_eq!(
        back.unique_until,
        Some(add(at(10), HOUR)),
        "a requeue keeps the period of the job's creation"
    );
    assert_answered(d, &unique_at("k", at(40), None), &newer).await;
    finish(d, newer.id, End::Done, at(50)).await;

    // Past the newer job's period its mark blocks nothing: the old job comes back.
    let lapsed = add(at(10), HOUR);
    let row = p.job_requeue(&requeue(old.id, lapsed)).await.unwrap();
    assert_eq!(row.state, JobState::Ready);
    assert_answered(d, &unique_at("k", lapsed, None), &old).await;
    finish(d, old.id, End::Dead, lapsed).await;

    // And in bulk: a dead row whose key only a lapsed mark names moves.
    let other = unique_at("k2", lapsed, Some(HOUR));
    enqueue(d, &other).await;
    finish(d, other.id, End::Dead, lapsed).await;
    let much_later = add(lapsed, HOUR);
    let moved = p.job_requeue_many(&bulk(much_later)).await.unwrap();
    assert_eq!(
        (moved.affected, moved.remaining),
        (2, 0),
        "both dead rows, their marks lapsed"
    );
    assert_eq!(get(d, old.id).await.state, JobState::Ready);
    assert_eq!(get(d, other.id).await.state, JobState::Ready);
}

/// A scheduler fire keeps the rule: a job of the fire whose key a finished job holds for a
/// period is answered by it (deduped); past the period, the fire inserts its job.
pub async fn job_unique_period_holds_against_a_fire(driver: Arc<dyn JobDriver>) {
    use crate::driver::scheduler_store::TaskFireParams;

    let d = &*driver;
    let store = d.scheduler_store().unwrap_or_else(|| {
        panic!(
            "the `{}` driver has no scheduler store: the fire case needs one",
            d.name()
        )
    });
    let holder = unique_at("daily", t0(), Some(HOUR));
    enqueue(d, &holder).await;
    finish(d, holder.id, End::Done, t0()).await;
    let fire = |expected, now, job: EnqueueRequest| TaskFireParams {
        task: "conformance.unique.task".into(),
        expected,
        watermark: now,
        occurrence: Some(now),
        jobs: vec![job],
        now,
    };
    let within = unique_at("daily", at(60), Some(HOUR));
    let fired = store
        .task_fire(&fire(None, at(60), within.clone()))
        .await
        .expect("fire");
    assert!(fired.fired);
    assert_eq!(
        fired.jobs,
        vec![EnqueueResult {
            id: holder.id,
            run_id: holder.run_id,
            deduped: true,
        }],
        "the holder answers the fire"
    );
    assert_eq!(
        d.job_get(&JobGetParams { id: within.id }).await.unwrap(),
        None
    );

    let past = unique_at("daily", at(3600), Some(HOUR));
    let fired = store
        .task_fire(&fire(Some(at(60)), at(3600), past.clone()))
        .await
        .expect("fire");
    assert_eq!(
        fired.jobs,
        vec![EnqueueResult {
            id: past.id,
            run_id: past.run_id,
            deduped: false,
        }],
        "past the period the fire inserts"
    );
    finish(d, past.id, End::Done, at(3600)).await;
    assert_answered(d, &unique_at("daily", at(3660), None), &past).await;
}

/// The purge may delete a finished row inside its period: the key is then free, and the next
/// enqueue of it makes a new job.
pub async fn job_unique_purge_frees_the_key_with_the_row(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let holder = unique_at("k", t0(), Some(HOUR));
    enqueue(d, &holder).await;
    finish(d, holder.id, End::Done, t0()).await;
    let gone = d
        .job_purge(&JobPurgeParams {
            done_before: at(1),
            finished_before: at(1),
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(gone, 1);
    let next = unique_at("k", at(60), None);
    let result = enqueue(d, &next).await;
    assert!(
        !result.deduped && result.id == next.id,
        "a purged holder holds nothing"
    );
}

fn add(at: Timestamp, by: Duration) -> Timestamp {
    crate::clock::add(at, by)
}
