//! Settling writes (`job_ack`, `job_nack`, `job_heartbeat`, `job_progress`), fenced on the
//! claim; `job_cancel`; `job_get`; `queue_stats`.

use std::sync::Arc;

use uuid::Uuid;

use super::*;
use crate::driver::{
    JobCancelParams, JobGetParams, QueueStatsParams, StepListParams, StepPutParams,
};

/// Runs `k`, lets its lease lapse and has `w2` re-claim it: answers the stale first claim and
/// the live second one.
async fn reclaimed(d: &dyn JobDriver) -> (JobId, ClaimIdentity, ClaimedJob) {
    let id = enqueue_key(d, "k").await;
    let first = claim_one(d, "w1", t0()).await;
    let second = claim_one(d, "w2", at(30)).await;
    assert_eq!(second.id, id);
    (id, first.by, second)
}

/// An ack settles the running job `done`, clears its lease, and lands once.
pub async fn job_ack_settles_done(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let id = enqueue_key(d, "k").await;
    let job = claim_one(d, "w1", t0()).await;
    assert!(ack(d, id, &job.by, at(3)).await);
    let row = get(d, id).await;
    assert_eq!(row.state, JobState::Done);
    assert_eq!(row.attempt, 1);
    assert_eq!(row.visible_at, None);
    assert_eq!(row.updated_at, at(3));
    assert!(
        !ack(d, id, &job.by, at(4)).await,
        "a second ack lands nowhere"
    );
    claim_none(d, "w1", at(100)).await;
}

/// An ack under a claim that no longer holds the row (re-claimed by another worker, or by the
/// same worker, or never this worker's) answers `false` and changes nothing.
pub async fn job_ack_is_fenced_on_the_claim(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let (id, stale, live) = reclaimed(d).await;
    assert!(!ack(d, id, &stale, at(31)).await, "the lapsed claim");
    let wrong_worker = ClaimIdentity {
        worker_id: "w1".into(),
        claim: live.by.claim,
    };
    assert!(
        !ack(d, id, &wrong_worker, at(31)).await,
        "another worker, same ordinal"
    );
    let row = get(d, id).await;
    assert_eq!(row.state, JobState::Running);
    assert_eq!(row.claimed_by.as_deref(), Some("w2"));

    // The same worker re-claiming after a lapse: its older claim is stale too.
    let again = claim_one(d, "w2", at(60)).await;
    assert!(
        !ack(d, id, &live.by, at(61)).await,
        "the same worker's older claim"
    );
    assert!(ack(d, id, &again.by, at(61)).await);
    assert!(
        !ack(d, Uuid::now_v7(), &again.by, at(61)).await,
        "an unknown job"
    );
}

/// A nack under a stale claim answers `false` and moves nothing.
pub async fn job_nack_is_fenced_on_the_claim(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let (id, stale, live) = reclaimed(d).await;
    for target in [
        NackTarget::Retry,
        NackTarget::Park,
        NackTarget::Fail,
        NackTarget::DeadLetter,
    ] {
        let params = nack_params(id, &stale, target, at(100), at(31));
        assert!(!nack(d, &params).await, "{target:?} under the lapsed claim");
    }
    let row = get(d, id).await;
    assert_eq!(row.state, JobState::Running);
    assert_eq!(row.last_error, None);
    assert!(
        nack(
            d,
            &nack_params(id, &live.by, NackTarget::Retry, at(100), at(31))
        )
        .await
    );
    assert!(
        !nack(
            d,
            &nack_params(id, &live.by, NackTarget::Retry, at(100), at(31))
        )
        .await,
        "a settled row takes no second nack"
    );
}

/// Each nack target lands in its state (retry -> ready, park -> suspended, fail -> failed,
/// dead letter -> dead), keeping the error, the counted attempt, and the new `run_at`.
pub async fn job_nack_sends_each_target_to_its_state(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    for (target, state) in [
        (NackTarget::Retry, JobState::Ready),
        (NackTarget::Park, JobState::Suspended),
        (NackTarget::Fail, JobState::Failed),
        (NackTarget::DeadLetter, JobState::Dead),
    ] {
        let mut req = request("conformance.job", &format!("{target:?}"));
        req.run_at = at(-1);
        enqueue(d, &req).await;
        let job = claim_one(d, "w1", t0()).await;
        assert_eq!(job.id, req.id);
        let params = nack_params(req.id, &job.by, target, at(50), at(2));
        assert!(nack(d, &params).await);
        let row = get(d, req.id).await;
        assert_eq!(row.state, state, "{target:?}");
        assert_eq!(row.attempt, 1, "{target:?} counts the attempt");
        assert_eq!(row.visible_at, None);
        assert_eq!(row.updated_at, at(2));
        assert_eq!(row.last_error, params.error, "{target:?}");
        assert_eq!(row.last_error_code, params.error_code, "{target:?}");
        if matches!(target, NackTarget::Retry | NackTarget::Park) {
            assert_eq!(row.run_at, at(50), "{target:?}");
        }
    }
    let stats = stats_of(d, QUEUE, at(2)).await;
    assert_eq!(
        (stats.delayed, stats.suspended, stats.failed, stats.dead),
        (1, 1, 1, 1),
        "{stats:?}"
    );
    // The retried row comes back at its new run_at with the next attempt.
    claim_none(d, "w1", at(49)).await;
    let retried = claim_one(d, "w1", at(50)).await;
    assert_eq!(retried.attempt, 2);
}

/// The next due time for [`QUEUE`] the wake announces, skipping every other signal; `None`
/// after `patience` of real time without one.
async fn next_due(
    wakes: &mut crate::driver::WakeReceiver,
    patience: std::time::Duration,
) -> Option<Timestamp> {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        match tokio::time::timeout_at(deadline, wakes.recv()).await {
            Ok(Some(crate::driver::WakeSignal::Due { queue, at })) if queue == QUEUE => {
                return Some(at)
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return None,
        }
    }
}

/// The push wake carries due times written for later, so an idle worker of any process starts
/// a job when due rather than at its next poll: a delayed enqueue, a retry after its backoff and
/// a park each announce their queue and run time ([`WakeSignal::Due`]) to every listener, and so
/// does a debounced enqueue that moves its queued holder's run time later.
///
/// [`WakeSignal::Due`]: crate::driver::WakeSignal::Due
pub async fn job_nack_and_delayed_enqueue_announce_their_due_times(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let mut wakes =
        d.wake_listen().await.expect("wake_listen").expect(
            "this case needs a push wake (`JobDriver::wake_listen`) that carries due times",
        );
    // A listener may take a moment to be in place (a LISTEN session, a subscription): announce
    // delayed jobs until one comes through.
    let mut heard = None;
    for n in 0..40 {
        let mut req = request("conformance.job", &format!("delayed-{n}"));
        req.run_at = at(100 + n);
        enqueue(d, &req).await;
        if let Some(due) = next_due(&mut wakes, std::time::Duration::from_millis(250)).await {
            heard = Some((due, n));
            break;
        }
    }
    let (due, n) = heard.expect("a delayed enqueue announces its due time");
    assert!(
        (100..=100 + n).any(|secs| due == at(secs)),
        "the delayed job's run time is announced, got {due}"
    );
    // A debounced enqueue that moves a queued holder's run time later announces the new time.
    let mut first = request("conformance.job", "debounced");
    first.run_at = at(200);
    first.on_conflict = ConflictPolicy::Replace;
    enqueue(d, &first).await;
    let mut later = request("conformance.job", "debounced");
    later.run_at = at(300);
    later.on_conflict = ConflictPolicy::Replace;
    enqueue(d, &later).await;
    let patience = std::time::Duration::from_secs(10);
    let mut announced = Vec::new();
    while let Some(due) = next_due(&mut wakes, patience).await {
        announced.push(due);
        if due == at(300) {
            break;
        }
    }
    assert_eq!(
        announced.last(),
        Some(&at(300)),
        "a debounce's later run time is announced: {announced:?}"
    );
    // A retry after its backoff, then a park (a sleep or an event wait's timeout).
    for (key, target, until) in [
        ("retried", NackTarget::Retry, at(50)),
        ("parked", NackTarget::Park, at(70)),
    ] {
        let mut req = request("conformance.job", key);
        req.run_at = at(-1);
        enqueue(d, &req).await;
        let job = claim_one(d, "w1", t0()).await;
        assert_eq!(job.id, req.id);
        assert!(nack(d, &nack_params(req.id, &job.by, target, until, at(2))).await);
        let patience = std::time::Duration::from_secs(10);
        let mut announced = Vec::new();
        while let Some(due) = next_due(&mut wakes, patience).await {
            announced.push(due);
            if due == until {
                break;
            }
        }
        assert_eq!(
            announced.last(),
            Some(&until),
            "{target:?} announces its run time: {announced:?}"
        );
    }
}

/// `counts_as_attempt = false` hands the attempt back: the next claim presents the same
/// number again, under a new claim ordinal; a nack with no error keeps the last one.
pub async fn job_nack_hands_the_attempt_back_when_not_counted(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let id = enqueue_key(d, "k").await;
    let first = claim_one(d, "w1", t0()).await;
    let failed = nack_params(id, &first.by, NackTarget::Retry, at(1), at(1));
    assert!(nack(d, &failed).await);
    let second = claim_one(d, "w1", at(1)).await;
    assert_eq!(second.attempt, 2);

    let mut shed = nack_params(id, &second.by, NackTarget::Retry, at(2), at(2));
    shed.counts_as_attempt = false;
    shed.error = None;
    shed.error_code = None;
    assert!(nack(d, &shed).await);
    let row = get(d, id).await;
    assert_eq!(row.state, JobState::Ready);
    assert_eq!(row.attempt, 1, "the uncounted attempt was handed back");
    assert_eq!(
        row.last_error, failed.error,
        "no error given: the last one stays"
    );
    assert_eq!(row.last_error_code, failed.error_code);
    let third = claim_one(d, "w1", at(2)).await;
    assert_eq!(third.attempt, 2, "the same attempt number, presented again");
    assert_eq!(third.by.claim, 3);
}

/// A heartbeat pushes `visible_at` to `now + visibility_timeout`: the row is not re-delivered
/// before then.
pub async fn job_heartbeat_extends_the_claim(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let id = enqueue_key(d, "k").await;
    let job = claim_one(d, "w1", t0()).await;
    assert!(heartbeat(d, id, &job.by, at(20)).await);
    let row = get(d, id).await;
    assert_eq!(row.visible_at, Some(at(50)));
    assert_eq!(row.state, JobState::Running);
    claim_none(d, "w2", at(40)).await;
    let again = claim_one(d, "w2", at(50)).await;
    assert_eq!(again.attempt, 2);
    assert!(
        !heartbeat(d, id, &job.by, at(51)).await,
        "re-claimed: stop the run"
    );
}

/// A heartbeat under a stale claim answers `false` and does not extend the live claim.
pub async fn job_heartbeat_is_fenced_on_the_claim(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let (id, stale, live) = reclaimed(d).await;
    assert!(!heartbeat(d, id, &stale, at(45)).await);
    assert_eq!(get(d, id).await.visible_at, Some(at(60)));
    assert!(heartbeat(d, id, &live.by, at(45)).await);
    assert_eq!(get(d, id).await.visible_at, Some(at(75)));
    assert!(ack(d, id, &live.by, at(46)).await);
    assert!(
        !heartbeat(d, id, &live.by, at(47)).await,
        "a settled row holds no claim"
    );
}

/// Progress is recorded under the live claim and refused under a stale one.
pub async fn job_progress_records_progress_and_is_fenced(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let (id, stale, live) = reclaimed(d).await;
    let progress = |done| Progress {
        done,
        total: 10,
        note: Some("rows".into()),
    };
    let params = |by: &ClaimIdentity, done| ProgressParams {
        job_id: id,
        by: by.clone(),
        progress: progress(done),
        now: at(31),
    };
    assert!(d.job_progress(&params(&live.by, 4)).await.unwrap());
    assert_eq!(get(d, id).await.progress, Some(progress(4)));
    assert!(!d.job_progress(&params(&stale, 9)).await.unwrap());
    assert_eq!(get(d, id).await.progress, Some(progress(4)));
}

/// Cancelling a queued job settles it `cancelled` at once, answers the row, and frees its key;
/// a cancelled row is never claimed.
pub async fn job_cancel_cancels_a_queued_job_and_frees_its_key(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let ready = enqueue_key(d, "k").await;
    let mut later = request("conformance.job", "later");
    later.run_at = at(60);
    enqueue(d, &later).await;
    for id in [ready, later.id] {
        let row = d
            .job_cancel(&JobCancelParams {
                reason: None,
                id,
                now: at(1),
                actor: None,
            })
            .await
            .unwrap();
        assert_eq!(row.id, id);
        assert_eq!(row.state, JobState::Cancelled);
        assert_eq!(row.updated_at, at(1));
        assert_eq!(get(d, id).await.state, JobState::Cancelled);
    }
    claim_none(d, "w1", at(100)).await;
    assert!(!enqueue(d, &request("conformance.job", "k")).await.deduped);
    assert_eq!(stats_of(d, QUEUE, at(1)).await.cancelled, 2);
}

/// Cancelling a running job settles it `cancelled`; the worker finds out at its next
/// heartbeat (`false`), and can neither ack, nack, report progress nor write a step.
pub async fn job_cancel_stops_a_running_job_at_its_next_heartbeat(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let id = enqueue_key(d, "k").await;
    let job = claim_one(d, "w1", t0()).await;
    let row = d
        .job_cancel(&JobCancelParams {
            reason: None,
            id,
            now: at(1),
            actor: None,
        })
        .await
        .unwrap();
    assert_eq!(row.state, JobState::Cancelled);
    assert!(!heartbeat(d, id, &job.by, at(2)).await);
    assert!(!ack(d, id, &job.by, at(2)).await);
    assert!(
        !nack(
            d,
            &nack_params(id, &job.by, NackTarget::Retry, at(2), at(2))
        )
        .await
    );
    let step = StepRecord {
        run_id: job.run_id,
        name: "after-cancel".into(),
        status: StepStatus::Completed,
        output: Some(serde_json::json!(1)),
        error: None,
        attempts: 1,
        wake_at: None,
        wait: None,
        updated_at: at(2),
    };
    let fence = StepFence {
        job_id: id,
        by: job.by.clone(),
    };
    assert!(!d
        .step_put(&StepPutParams {
            record: &step,
            fence: &fence
        })
        .await
        .unwrap());
    assert!(d
        .step_list(&StepListParams { run_id: job.run_id })
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        get(d, id).await.state,
        JobState::Cancelled,
        "nothing un-cancels it"
    );
    claim_none(d, "w2", at(100)).await;
}

/// A finished job, an already cancelled one, and an unknown id are `X_JOB_NOT_CANCELLABLE`.
pub async fn job_cancel_refuses_finished_and_unknown_jobs(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let id = enqueue_key(d, "k").await;
    let job = claim_one(d, "w1", t0()).await;
    assert!(ack(d, id, &job.by, at(1)).await);
    assert_refused(
        d.job_cancel(&JobCancelParams {
            reason: None,
            id,
            now: at(2),
            actor: None,
        })
        .await,
        ErrorCode::JobNotCancellable,
    );
    assert_eq!(get(d, id).await.state, JobState::Done);

    let other = enqueue_key(d, "other").await;
    d.job_cancel(&JobCancelParams {
        reason: None,
        id: other,
        now: at(2),
        actor: None,
    })
    .await
    .unwrap();
    assert_refused(
        d.job_cancel(&JobCancelParams {
            reason: None,
            id: other,
            now: at(3),
            actor: None,
        })
        .await,
        ErrorCode::JobNotCancellable,
    );
    assert_refused(
        d.job_cancel(&JobCancelParams {
            reason: None,
            id: Uuid::now_v7(),
            now: at(3),
            actor: None,
        })
        .await,
        ErrorCode::JobNotCancellable,
    );
}

/// `job_get` answers `None` for an id no row carries.
pub async fn job_get_answers_none_for_an_unknown_id(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    enqueue_key(d, "k").await;
    assert_eq!(
        d.job_get(&JobGetParams { id: Uuid::now_v7() })
            .await
            .unwrap(),
        None
    );
}

/// `queue_stats` counts each queue per state: a queued row not yet due is `delayed`, the age
/// of the oldest due row is reported, and each queue is its own row.
pub async fn queue_stats_counts_each_queue_per_state(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    // At t0: six due rows (run_at -20 .. -15) and one delayed to +100.
    let mut ids = Vec::new();
    for i in 0..6 {
        let mut req = request("conformance.job", &format!("k{i}"));
        req.run_at = at(-20 + i);
        ids.push(enqueue(d, &req).await.id);
    }
    let mut delayed = request("conformance.job", "delayed");
    delayed.run_at = at(100);
    enqueue(d, &delayed).await;
    let mut elsewhere = request("conformance.job", "elsewhere");
    elsewhere.queue = "other".into();
    enqueue(d, &elsewhere).await;

    // Claim the five oldest, then settle four of them differently; one stays running.
    let claimed = claim(d, &claim_params("w1", 5, t0())).await.jobs;
    assert_eq!(claimed.len(), 5);
    let by = |id: JobId| claimed.iter().find(|j| j.id == id).unwrap().by.clone();
    assert!(ack(d, ids[0], &by(ids[0]), t0()).await);
    assert!(
        nack(
            d,
            &nack_params(ids[1], &by(ids[1]), NackTarget::Fail, t0(), t0())
        )
        .await
    );
    assert!(
        nack(
            d,
            &nack_params(ids[2], &by(ids[2]), NackTarget::DeadLetter, t0(), t0())
        )
        .await
    );
    assert!(
        nack(
            d,
            &nack_params(ids[3], &by(ids[3]), NackTarget::Park, at(500), t0())
        )
        .await
    );
    // ids[4] stays running; ids[5] stays ready (due since -15); cancel a fresh one.
    let cancelled = enqueue_key(d, "cancelled").await;
    d.job_cancel(&JobCancelParams {
        reason: None,
        id: cancelled,
        now: t0(),
        actor: None,
    })
    .await
    .unwrap();

    let all = d
        .queue_stats(&QueueStatsParams { now: t0() })
        .await
        .unwrap();
    let stats = all
        .iter()
        .find(|s| s.queue == QUEUE)
        .expect("the queue's row");
    assert_eq!(
        *stats,
        QueueStats {
            queue: QUEUE.to_string(),
            ready: 1,
            delayed: 1,
            running: 1,
            suspended: 1,
            done: 1,
            failed: 1,
            dead: 1,
            cancelled: 1,
            oldest_ready_ms: Some(15_000),
        }
    );
    let other = all
        .iter()
        .find(|s| s.queue == "other")
        .expect("the other row");
    assert_eq!((other.ready, other.running), (1, 0));
    assert_eq!(other.oldest_ready_ms, Some(0));
    // `queue_depth` answers the same counts, its done rows left uncounted.
    let depth = d
        .queue_depth(&QueueStatsParams { now: t0() })
        .await
        .unwrap();
    let expected: Vec<QueueStats> = all
        .iter()
        .map(|s| QueueStats {
            done: 0,
            ..s.clone()
        })
        .collect();
    assert_eq!(depth, expected);
    // At +100 the delayed row is due too; the oldest is still the one due since -15.
    let later = stats_of(d, QUEUE, at(100)).await;
    assert_eq!((later.ready, later.delayed), (2, 0));
    assert_eq!(later.oldest_ready_ms, Some(115_000));
}

/// A job interrupted on one attempt (handed back uncounted with `X_DRAINING`) that then
/// completes carries no error: `job_ack` and `job_ack_many` clear `last_error` and
/// `last_error_code`, while the interrupted attempt's failed step record keeps its own.
pub async fn job_ack_clears_an_earlier_attempts_error(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let single = enqueue_key(d, "single").await;
    let batched = enqueue_key(d, "batched").await;
    let first = claim(d, &claim_params("w1", 10, t0())).await.jobs;
    assert_eq!(first.len(), 2);
    for job in first {
        let id = job.id;
        let step = StepRecord {
            run_id: job.run_id,
            name: "interrupted".into(),
            status: StepStatus::Failed,
            output: None,
            error: Some("X_DRAINING: the worker is draining".into()),
            attempts: 1,
            wake_at: None,
            wait: None,
            updated_at: t0(),
        };
        let fence = StepFence {
            job_id: id,
            by: job.by.clone(),
        };
        assert!(d
            .step_put(&StepPutParams {
                record: &step,
                fence: &fence
            })
            .await
            .unwrap());
        let mut interrupted = nack_params(id, &job.by, NackTarget::Retry, at(1), at(1));
        interrupted.counts_as_attempt = false;
        interrupted.error = Some("X_DRAINING: the worker is draining".into());
        interrupted.error_code = Some(ErrorCode::Draining.as_str().to_string());
        assert!(nack(d, &interrupted).await);
        let row = get(d, id).await;
        assert_eq!(row.last_error_code.as_deref(), Some("X_DRAINING"));
    }

    let claimed = claim(d, &claim_params("w2", 10, at(2))).await.jobs;
    assert_eq!(claimed.len(), 2);
    let by = |id: JobId| claimed.iter().find(|j| j.id == id).unwrap().by.clone();
    assert!(ack(d, single, &by(single), at(3)).await);
    let landed = d
        .job_ack_many(&[AckParams {
            job_id: batched,
            by: by(batched),
            result: None,
            now: at(3),
        }])
        .await
        .unwrap();
    assert_eq!(landed, vec![true]);
    for id in [single, batched] {
        let row = get(d, id).await;
        assert_eq!(row.state, JobState::Done);
        assert_eq!(row.attempt, 1, "the interrupted attempt was not counted");
        assert_eq!(row.last_error, None, "a completed job carries no error");
        assert_eq!(row.last_error_code, None);
        let steps = d
            .step_list(&StepListParams { run_id: row.run_id })
            .await
            .unwrap();
        assert_eq!(
            steps[0].error.as_deref(),
            Some("X_DRAINING: the worker is draining"),
            "the step history keeps it"
        );
    }
}
