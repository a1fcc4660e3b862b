//! The operator surface ([`JobIntrospection`]): the parity fixtures. Every case asks the
//! driver for its `introspect()` sub-port and skips, with a line on stderr, when it has none.

use std::sync::Arc;

use uuid::Uuid;

use super::*;
use crate::driver::introspect::*;
use crate::driver::introspect::{
    CounterTotalsParams, CountersParams, CountersRollupParams, JobPromoteParams, JobRemoveParams,
    QueuePauseParams, QueueResumeParams, WorkerForgetParams, WorkerListParams,
};
use crate::driver::{JobCancelParams, JobGetParams, StepListParams, StepPutParams};

/// The operator port: a driver without one fails these cases loudly, never skips them.
fn port(driver: &dyn JobDriver) -> &dyn JobIntrospection {
    driver.introspect().unwrap_or_else(|| {
        panic!(
            "the `{}` driver has no introspection: the operator cases need one",
            driver.name()
        )
    })
}

/// A due request created at `now` (so rows sort by creation), under `key`.
fn request_at(name: &str, key: &str, now: Timestamp) -> EnqueueRequest {
    EnqueueRequest {
        run_at: now,
        now,
        ..request(name, key)
    }
}

async fn list(p: &dyn JobIntrospection, params: JobListParams) -> JobPage {
    p.job_list(&params)
        .await
        .unwrap_or_else(|e| panic!("job_list failed: {e}"))
}

fn ids(page: &JobPage) -> Vec<JobId> {
    page.jobs.iter().map(|j| j.id).collect()
}

fn completed_step(run_id: RunId, name: &str, now: Timestamp) -> StepRecord {
    StepRecord {
        run_id,
        name: name.to_string(),
        status: StepStatus::Completed,
        output: Some(serde_json::json!({ "step": name })),
        error: None,
        attempts: 1,
        wake_at: None,
        wait: None,
        updated_at: now,
    }
}

/// Runs job `id` (the only due one) to `dead` at `now`.
async fn run_dead(d: &dyn JobDriver, worker: &str, now: Timestamp) -> ClaimedJob {
    let job = claim_one(d, worker, now).await;
    let params = nack_params(job.id, &job.by, NackTarget::DeadLetter, now, now);
    assert!(nack(d, &params).await);
    job
}

/// Pages are newest first by `(created_at, id)`; `after` walks to older pages, `before` back to
/// newer ones (still newest first); a short page is the last.
pub async fn job_list_pages_newest_first_both_ways(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let mut made = Vec::new();
    for n in 1..=5 {
        let id = enqueue(d, &request_at("list.job", &format!("k{n}"), at(n)))
            .await
            .id;
        made.push(id);
    }
    made.reverse(); // newest first
    let first = list(
        p,
        JobListParams {
            limit: Some(2),
            ..JobListParams::default()
        },
    )
    .await;
    assert_eq!(ids(&first), made[0..2]);
    assert_eq!(first.before, None, "the first page has no newer page");
    let second = list(
        p,
        JobListParams {
            limit: Some(2),
            after: first.after.clone(),
            ..JobListParams::default()
        },
    )
    .await;
    assert_eq!(ids(&second), made[2..4]);
    let last = list(
        p,
        JobListParams {
            limit: Some(2),
            after: second.after.clone(),
            ..JobListParams::default()
        },
    )
    .await;
    assert_eq!(ids(&last), made[4..5]);
    assert_eq!(last.after, None, "a short page is the last");
    let back = list(
        p,
        JobListParams {
            limit: Some(2),
            before: second.before.clone(),
            ..JobListParams::default()
        },
    )
    .await;
    assert_eq!(ids(&back), made[0..2], "the previous page, newest first");
    let default = list(p, JobListParams::default()).await;
    assert_eq!(ids(&default), made, "the default page holds up to 100");
    assert_eq!(default.after, None);
    assert!(default.jobs.iter().all(|j| j.state == JobState::Ready));
}

/// Every filter narrows the page: queue, name, state, tenant, id prefix, creation window.
pub async fn job_list_filters_by_every_field(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let a = enqueue(d, &request_at("filter.a", "k1", at(1))).await.id;
    let mut other_queue = request_at("filter.b", "k2", at(2));
    other_queue.queue = "elsewhere".into();
    let b = enqueue(d, &other_queue).await.id;
    let mut tenant = request_at("filter.a", "k3", at(3));
    tenant.tenant_id = Some("acme".into());
    let c = enqueue(d, &tenant).await.id;
    let mut later = request_at("filter.a", "k4", at(4));
    later.run_at = at(1000);
    let delayed = enqueue(d, &later).await.id;

    let by = |params: JobListParams| async move { ids(&list(p, params).await) };
    assert_eq!(
        by(JobListParams {
            queue: Some("elsewhere".into()),
            ..JobListParams::default()
        })
        .await,
        [b]
    );
    assert_eq!(
        by(JobListParams {
            name: Some("filter.a".into()),
            ..JobListParams::default()
        })
        .await,
        [delayed, c, a]
    );
    assert_eq!(
        by(JobListParams {
            state: Some(JobState::Delayed),
            ..JobListParams::default()
        })
        .await,
        [delayed]
    );
    assert_eq!(
        by(JobListParams {
            tenant_id: Some("acme".into()),
            ..JobListParams::default()
        })
        .await,
        [c]
    );
    assert_eq!(
        by(JobListParams {
            id_prefix: Some(b.to_string()[..30].to_string()),
            ..JobListParams::default()
        })
        .await,
        [b]
    );
    assert_eq!(
        by(JobListParams {
            created_from: Some(at(2)),
            created_to: Some(at(4)),
            ..JobListParams::default()
        })
        .await,
        [c, b],
        "from is inclusive, to exclusive"
    );
}

/// A limit over 200 (or zero), or a cursor no list wrote, is `X_JOB_PAGE_INVALID` naming the
/// cursor; both cursors at once is `X_INVARIANT`.
pub async fn job_list_refuses_bad_limits_and_foreign_cursors(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    enqueue_key(d, "k").await;
    let page = |limit: Option<u32>, after: Option<&str>, before: Option<&str>| JobListParams {
        limit,
        after: after.map(str::to_string),
        before: before.map(str::to_string),
        ..JobListParams::default()
    };
    assert_eq!(
        list(p, page(Some(MAX_JOB_PAGE), None, None))
            .await
            .jobs
            .len(),
        1
    );
    for limit in [MAX_JOB_PAGE + 1, 0] {
        assert_refused(
            p.job_list(&page(Some(limit), None, None)).await,
            ErrorCode::JobPageInvalid,
        );
    }
    let after = p.job_list(&page(None, Some("page-2"), None)).await;
    assert!(after
        .as_ref()
        .is_err_and(|e| e.message().contains("`after`")));
    assert_refused(after, ErrorCode::JobPageInvalid);
    let before = p.job_list(&page(None, None, Some("j1.x.y"))).await;
    assert!(before
        .as_ref()
        .is_err_and(|e| e.message().contains("`before`")));
    assert_refused(before, ErrorCode::JobPageInvalid);
    let cursor = "j1.1893456000000000.0190a0b0-0000-7000-8000-000000000001";
    assert_refused(
        p.job_list(&page(None, Some(cursor), Some(cursor))).await,
        ErrorCode::Invariant,
    );
}

/// Remove deletes a row and its steps; a running row is `X_JOB_NOT_REMOVABLE`, an unknown id
/// `X_JOB_NOT_FOUND`.
pub async fn job_remove_deletes_the_row_and_its_steps(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let id = enqueue_key(d, "k").await;
    let job = claim_one(d, "w1", t0()).await;
    let fence = StepFence {
        job_id: id,
        by: job.by.clone(),
    };
    assert!(d
        .step_put(&StepPutParams {
            record: &completed_step(job.run_id, "a", at(1)),
            fence: &fence
        })
        .await
        .unwrap());
    assert_refused(
        p.job_remove(&JobRemoveParams {
            id,
            actor: None,
            now: at(99),
        })
        .await,
        ErrorCode::JobNotRemovable,
    );
    assert_refused(
        p.job_remove(&JobRemoveParams {
            id: Uuid::now_v7(),
            actor: None,
            now: at(99),
        })
        .await,
        ErrorCode::JobNotFound,
    );
    assert!(ack(d, id, &job.by, at(2)).await);
    let removed = p
        .job_remove(&JobRemoveParams {
            id,
            actor: None,
            now: at(99),
        })
        .await
        .expect("a done job is removable");
    assert_eq!(removed.state, JobState::Done);
    assert_eq!(d.job_get(&JobGetParams { id }).await.unwrap(), None);
    assert!(d
        .step_list(&StepListParams { run_id: job.run_id })
        .await
        .unwrap()
        .is_empty());
    assert_refused(
        p.job_remove(&JobRemoveParams {
            id,
            actor: None,
            now: at(99),
        })
        .await,
        ErrorCode::JobNotFound,
    );
}

/// Requeue puts one finished job back, due now, attempts from zero, on the same run; a live job
/// is `X_JOB_NOT_REQUEUEABLE`, a key a live job holds `X_JOB_DUPLICATE`, an unknown id
/// `X_JOB_NOT_FOUND`.
pub async fn job_requeue_refuses_live_unknown_and_held_keys(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let requeue = |id, now| JobRequeueParams {
        id,
        from_step: None,
        now,
        actor: None,
    };
    let id = enqueue_key(d, "k").await;
    assert_refused(
        p.job_requeue(&requeue(id, at(1))).await,
        ErrorCode::JobNotRequeueable,
    );
    assert_refused(
        p.job_requeue(&requeue(Uuid::now_v7(), at(1))).await,
        ErrorCode::JobNotFound,
    );
    let dead = run_dead(d, "w1", at(1)).await;
    assert_eq!(dead.id, id);

    // A new live job took the key: the dead one cannot come back while it lives.
    let holder = enqueue(d, &request_at("conformance.job", "k", at(2))).await;
    assert!(!holder.deduped);
    assert_refused(
        p.job_requeue(&requeue(id, at(3))).await,
        ErrorCode::JobDuplicate,
    );
    assert_eq!(get(d, id).await.state, JobState::Dead, "left as it ended");
    d.job_cancel(&JobCancelParams {
        id: holder.id,
        now: at(4),
        actor: None,
    })
    .await
    .unwrap();

    let row = p.job_requeue(&requeue(id, at(5))).await.expect("requeued");
    assert_eq!(row.state, JobState::Ready);
    assert_eq!(row.attempt, 0);
    assert_eq!(row.run_at, at(5));
    assert_eq!(row.run_id, dead.run_id, "same run: stored steps replay");
    assert_eq!(row, get(d, id).await);
    let again = claim_one(d, "w2", at(5)).await;
    assert_eq!((again.id, again.attempt), (id, 1));
    assert!(again.by.claim > dead.by.claim, "claim ordinals never reset");
}

/// `from_step` forgets that step and every step written after it, so they run again; a step the
/// run does not have is `X_INVARIANT` and changes nothing.
pub async fn job_requeue_from_step_forgets_it_and_later_steps(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let id = enqueue_key(d, "k").await;
    let job = claim_one(d, "w1", t0()).await;
    let fence = StepFence {
        job_id: id,
        by: job.by.clone(),
    };
    for (n, name) in ["charge", "email", "report"].into_iter().enumerate() {
        let step = completed_step(job.run_id, name, at(n as i64 + 1));
        assert!(d
            .step_put(&StepPutParams {
                record: &step,
                fence: &fence
            })
            .await
            .unwrap());
    }
    let params = nack_params(id, &job.by, NackTarget::DeadLetter, at(5), at(5));
    assert!(nack(d, &params).await);
    assert_refused(
        p.job_requeue(&JobRequeueParams {
            id,
            from_step: Some("nope".into()),
            now: at(6),
            actor: None,
        })
        .await,
        ErrorCode::Invariant,
    );
    assert_eq!(get(d, id).await.state, JobState::Dead);
    assert_eq!(
        d.step_list(&StepListParams { run_id: job.run_id })
            .await
            .unwrap()
            .len(),
        3
    );
    p.job_requeue(&JobRequeueParams {
        id,
        from_step: Some("email".into()),
        now: at(6),
        actor: None,
    })
    .await
    .expect("requeued from a step");
    let kept: Vec<String> = d
        .step_list(&StepListParams { run_id: job.run_id })
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(kept, ["charge"]);
}

/// Promote makes a delayed job, or a ready one backing off, due now; a due, running or finished
/// job is `X_JOB_NOT_PROMOTABLE`, an unknown id `X_JOB_NOT_FOUND`.
pub async fn job_promote_makes_a_waiting_job_due(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let mut later = request("conformance.job", "delayed");
    later.run_at = at(3600);
    let delayed = enqueue(d, &later).await.id;
    let row = p
        .job_promote(&JobPromoteParams {
            id: delayed,
            now: at(1),
            actor: None,
        })
        .await
        .expect("promoted");
    assert_eq!((row.state, row.run_at), (JobState::Ready, at(1)));
    assert_refused(
        p.job_promote(&JobPromoteParams {
            id: delayed,
            now: at(2),
            actor: None,
        })
        .await,
        ErrorCode::JobNotPromotable,
    );
    let job = claim_one(d, "w1", at(2)).await;
    assert_eq!(job.id, delayed);
    assert_refused(
        p.job_promote(&JobPromoteParams {
            id: delayed,
            now: at(3),
            actor: None,
        })
        .await,
        ErrorCode::JobNotPromotable,
    );

    // Backing off after a failure: ready, with a run time in the future.
    let retry = nack_params(delayed, &job.by, NackTarget::Retry, at(600), at(3));
    assert!(nack(d, &retry).await);
    claim_none(d, "w1", at(4)).await;
    p.job_promote(&JobPromoteParams {
        id: delayed,
        now: at(4),
        actor: None,
    })
    .await
    .expect("backing off");
    let job = claim_one(d, "w1", at(4)).await;
    assert!(ack(d, delayed, &job.by, at(5)).await);
    assert_refused(
        p.job_promote(&JobPromoteParams {
            id: delayed,
            now: at(6),
            actor: None,
        })
        .await,
        ErrorCode::JobNotPromotable,
    );
    assert_refused(
        p.job_promote(&JobPromoteParams {
            id: Uuid::now_v7(),
            now: at(6),
            actor: None,
        })
        .await,
        ErrorCode::JobNotFound,
    );
}

/// The bulk verbs refuse a state they cannot move.
pub async fn job_bulk_verbs_refuse_states_they_cannot_move(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let bulk = |state| JobBulkParams {
        state,
        queue: None,
        name: None,
        tenant_id: None,
        now: t0(),
        actor: None,
    };
    for live in [JobState::Ready, JobState::Running, JobState::Suspended] {
        assert_refused(
            p.job_requeue_many(&bulk(live)).await,
            ErrorCode::JobNotRequeueable,
        );
    }
    assert_refused(
        p.job_remove_many(&bulk(JobState::Running)).await,
        ErrorCode::JobNotRemovable,
    );
    for state in [JobState::Done, JobState::Running, JobState::Suspended] {
        assert_refused(
            p.job_promote_many(&bulk(state)).await,
            ErrorCode::JobNotPromotable,
        );
    }
}

/// `remove_many` and `promote_many` move at most 1,000 rows a call and say how many remain.
pub async fn job_bulk_verbs_move_at_most_a_thousand_rows(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let total = MAX_BULK_ROWS as usize + 7;
    let requests: Vec<EnqueueRequest> = (0..total)
        .map(|n| {
            let mut r = request("bulk.job", &format!("k{n}"));
            r.run_at = at(3600);
            r
        })
        .collect();
    d.job_enqueue_many(&requests).await.expect("enqueued");
    let bulk = |state, now| JobBulkParams {
        state,
        queue: Some(QUEUE.into()),
        name: Some("bulk.job".into()),
        tenant_id: None,
        now,
        actor: None,
    };
    let first = p
        .job_promote_many(&bulk(JobState::Delayed, at(1)))
        .await
        .unwrap();
    assert_eq!(
        first,
        BulkResult {
            affected: u64::from(MAX_BULK_ROWS),
            remaining: 7
        }
    );
    let second = p
        .job_promote_many(&bulk(JobState::Delayed, at(1)))
        .await
        .unwrap();
    assert_eq!(
        second,
        BulkResult {
            affected: 7,
            remaining: 0
        }
    );
    assert_eq!(stats_of(d, QUEUE, at(1)).await.ready, total as u64);
    let removed = p
        .job_remove_many(&bulk(JobState::Ready, at(1)))
        .await
        .unwrap();
    assert_eq!(
        removed,
        BulkResult {
            affected: u64::from(MAX_BULK_ROWS),
            remaining: 7
        }
    );
    let removed = p
        .job_remove_many(&bulk(JobState::Ready, at(1)))
        .await
        .unwrap();
    assert_eq!(
        removed,
        BulkResult {
            affected: 7,
            remaining: 0
        }
    );
    assert_eq!(
        stats_of(d, QUEUE, at(1)).await,
        QueueStats {
            queue: QUEUE.into(),
            ..QueueStats::default()
        }
    );
}

/// `requeue_many` skips a row whose key a live job holds and, of finished rows sharing a key,
/// requeues the oldest; `remaining` counts only rows a second call could move.
pub async fn job_requeue_many_leaves_held_keys_and_takes_the_oldest(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    // Two dead rows under "shared" (the older first), one under "held" whose key a live job
    // then takes, one under "free".
    for (n, key) in ["shared", "shared", "held", "free"].into_iter().enumerate() {
        let now = at(n as i64 * 10);
        enqueue(d, &request_at("conformance.job", key, now)).await;
        run_dead(d, "w1", now).await;
    }
    let holder = enqueue(d, &request_at("conformance.job", "held", at(50))).await;
    assert!(!holder.deduped);
    let dead = |page: JobPage| {
        page.jobs
            .into_iter()
            .map(|j| (j.id, j.created_at))
            .collect::<Vec<_>>()
    };
    let before = dead(
        list(
            p,
            JobListParams {
                state: Some(JobState::Dead),
                ..JobListParams::default()
            },
        )
        .await,
    );
    assert_eq!(before.len(), 4);
    let bulk = JobBulkParams {
        state: JobState::Dead,
        queue: None,
        name: None,
        tenant_id: None,
        now: at(60),
        actor: None,
    };
    let moved = p.job_requeue_many(&bulk).await.unwrap();
    assert_eq!(
        moved,
        BulkResult {
            affected: 2,
            remaining: 0
        }
    );
    let left = dead(
        list(
            p,
            JobListParams {
                state: Some(JobState::Dead),
                ..JobListParams::default()
            },
        )
        .await,
    );
    // Left: the newer "shared" row (created at 10) and the "held" one (created at 20).
    let mut left_times: Vec<_> = left.iter().map(|(_, c)| *c).collect();
    left_times.sort();
    assert_eq!(left_times, [at(10), at(20)]);
    assert_eq!(
        p.job_requeue_many(&bulk).await.unwrap(),
        BulkResult::default(),
        "call until zero terminates"
    );
}

/// A paused queue is claimed by no one from the next claim on; enqueues still land; the pause
/// keeps who paused it; resume answers whether it was paused.
pub async fn queue_pause_stops_the_next_claim(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    p.queue_pause(&QueuePauseParams {
        queue: QUEUE,
        actor: Some("ops@example.com"),
        now: at(1),
    })
    .await
    .unwrap();
    p.queue_pause(&QueuePauseParams {
        queue: QUEUE,
        actor: Some("someone-else"),
        now: at(2),
    })
    .await
    .unwrap();
    let id = enqueue_key(d, "k").await;
    claim_none(d, "w1", at(3)).await;
    assert_eq!(
        p.queue_paused().await.unwrap(),
        [QueuePause {
            queue: QUEUE.into(),
            paused_at: at(1),
            paused_by: Some("ops@example.com".into()),
        }],
        "the first pause's time and actor stay"
    );
    assert!(p
        .queue_resume(&QueueResumeParams {
            queue: QUEUE,
            now: at(4)
        })
        .await
        .unwrap());
    assert!(!p
        .queue_resume(&QueueResumeParams {
            queue: QUEUE,
            now: at(4)
        })
        .await
        .unwrap());
    assert!(p.queue_paused().await.unwrap().is_empty());
    assert_eq!(claim_one(d, "w1", at(5)).await.id, id);
}

/// Worker rows live one ttl past their last heartbeat, carry at most 100 in-flight ids, and go
/// when forgotten.
pub async fn worker_rows_expire_and_are_forgotten(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let in_flight: Vec<JobId> = (0..150).map(|_| Uuid::now_v7()).collect();
    let announce = |id: &str, now| WorkerAnnounce {
        id: id.to_string(),
        host: "host-a".into(),
        started_at: t0(),
        queues: vec![QUEUE.into(), "email".into()],
        slots: 16,
        in_flight: in_flight.clone(),
        in_flight_count: 150,
        ttl: VISIBILITY,
        now,
    };
    p.worker_announce(&announce("w1", t0())).await.unwrap();
    p.worker_announce(&announce("w2", at(10))).await.unwrap();
    let rows = p
        .worker_list(&WorkerListParams { now: at(20) })
        .await
        .unwrap();
    assert_eq!(
        rows.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(),
        ["w1", "w2"]
    );
    let w1 = &rows[0];
    assert_eq!(w1.in_flight.len(), MAX_WORKER_IN_FLIGHT);
    assert_eq!(w1.in_flight[..], in_flight[..MAX_WORKER_IN_FLIGHT]);
    assert_eq!(w1.in_flight_count, 150);
    assert_eq!((w1.heartbeat_at, w1.expires_at), (t0(), at(30)));
    assert_eq!(w1.queues, [QUEUE, "email"]);
    assert_eq!(
        (w1.slots, w1.host.as_str(), w1.started_at),
        (16, "host-a", t0())
    );
    let rows = p
        .worker_list(&WorkerListParams { now: at(30) })
        .await
        .unwrap();
    assert_eq!(
        rows.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(),
        ["w2"],
        "w1 expired one ttl after its heartbeat"
    );
    p.worker_announce(&announce("w1", at(30))).await.unwrap();
    p.worker_forget(&WorkerForgetParams { id: "w2" })
        .await
        .unwrap();
    let rows = p
        .worker_list(&WorkerListParams { now: at(31) })
        .await
        .unwrap();
    assert_eq!(
        rows.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(),
        ["w1"]
    );
}

/// The settle itself moves the counters: an ack adds `done`, a counted retry `retried`, a fail
/// `failed`, a dead letter (or a burial) `dead`; a suspension, an uncounted hand-back and a
/// cancel add nothing. Durations run from the claim to the settle.
pub async fn counters_move_with_the_settle(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let name = "conformance.job";
    let settle = |target: Option<NackTarget>, counted: bool, key: &'static str| async move {
        enqueue_key(d, key).await;
        let job = claim_one(d, "w1", at(60)).await;
        match target {
            None => assert!(ack(d, job.id, &job.by, at(62)).await),
            Some(target) => {
                let mut params = nack_params(job.id, &job.by, target, at(10_000), at(62));
                params.counts_as_attempt = counted;
                assert!(nack(d, &params).await);
            }
        }
    };
    settle(None, true, "done").await;
    settle(Some(NackTarget::Retry), true, "retried").await;
    settle(Some(NackTarget::Retry), false, "shed").await;
    settle(Some(NackTarget::Park), false, "parked").await;
    settle(Some(NackTarget::Fail), true, "failed").await;
    settle(Some(NackTarget::DeadLetter), true, "dead").await;
    let cancelled = enqueue_key(d, "cancelled").await;
    claim_one(d, "w1", at(60)).await;
    d.job_cancel(&JobCancelParams {
        id: cancelled,
        now: at(62),
        actor: None,
    })
    .await
    .unwrap();

    let buckets = p
        .counters(&CountersParams { name, since: t0() })
        .await
        .unwrap();
    assert_eq!(
        buckets,
        [CounterBucket {
            bucket: Some(at(60)),
            width_secs: 60,
            done: 1,
            retried: 1,
            failed: 1,
            dead: 1,
            duration_ms: 4 * 2_000,
        }]
    );
    assert!(p
        .counters(&CountersParams {
            name,
            since: at(61)
        })
        .await
        .unwrap()
        .is_empty());
    assert!(p
        .counters(&CountersParams {
            name: "other",
            since: t0()
        })
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        p.counter_totals(&CounterTotalsParams { since: t0() })
            .await
            .unwrap(),
        [CounterTotals {
            name: name.into(),
            done: 1,
            retried: 1,
            failed: 1,
            dead: 1,
            duration_ms: 8_000,
        }]
    );
}

/// A batched ack counts each job it settles, and a claim's burial of a lapsed final attempt
/// counts it dead, with the attempt's duration from its claim.
pub async fn counters_count_a_batched_ack_and_a_burial(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let mut last = request("conformance.job", "buried");
    last.max_attempts = 1;
    enqueue(d, &last).await;
    claim_one(d, "w1", at(60)).await;
    enqueue_key(d, "a").await;
    enqueue_key(d, "b").await;
    // The lease of the first lapses at 60 + VISIBILITY; this claim buries it and takes the two.
    let later = at(60)
        + chrono::Duration::from_std(VISIBILITY).expect("small")
        + chrono::Duration::seconds(5);
    let result = claim(d, &claim_params("w2", 10, later)).await;
    assert_eq!(result.exhausted.len(), 1);
    assert_eq!(result.jobs.len(), 2);
    let acks: Vec<AckParams> = result
        .jobs
        .iter()
        .map(|j| AckParams {
            job_id: j.id,
            by: j.by.clone(),
            now: later + chrono::Duration::seconds(10),
        })
        .collect();
    assert_eq!(d.job_ack_many(&acks).await.unwrap(), vec![true, true]);
    let buried_ms = (later - at(60)).num_milliseconds() as u64;
    let totals = p
        .counter_totals(&CounterTotalsParams { since: t0() })
        .await
        .unwrap();
    assert_eq!(
        totals,
        [CounterTotals {
            name: "conformance.job".into(),
            done: 2,
            retried: 0,
            failed: 0,
            dead: 1,
            duration_ms: buried_ms + 2 * 10_000,
        }]
    );
}

/// The rollup folds 1-minute buckets older than a day into 5-minute ones, those older than a
/// week into hours, and drops hours older than 30 days; a second run at the same time moves
/// nothing.
pub async fn counters_rollup_folds_buckets_into_the_next_tier(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let name = "conformance.job";
    // Two completions in two minutes of one 5-minute bucket (minutes 1 and 2).
    for (n, minute) in [1_i64, 2].into_iter().enumerate() {
        enqueue(d, &request_at(name, &format!("k{n}"), at(minute * 60))).await;
        let job = claim_one(d, "w1", at(minute * 60)).await;
        assert!(ack(d, job.id, &job.by, at(minute * 60 + 1)).await);
    }
    assert_eq!(
        p.counters(&CountersParams { name, since: t0() })
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        p.counters_rollup(&CountersRollupParams { now: at(3600) })
            .await
            .unwrap(),
        0,
        "still a day's minutes"
    );

    let day = 24 * 3600;
    assert!(
        p.counters_rollup(&CountersRollupParams {
            now: at(day + 3600)
        })
        .await
        .unwrap()
            > 0
    );
    assert_eq!(
        p.counters_rollup(&CountersRollupParams {
            now: at(day + 3600)
        })
        .await
        .unwrap(),
        0,
        "idempotent"
    );
    let folded = p
        .counters(&CountersParams { name, since: t0() })
        .await
        .unwrap();
    assert_eq!(
        folded,
        [CounterBucket {
            bucket: Some(t0()),
            width_secs: 300,
            done: 2,
            retried: 0,
            failed: 0,
            dead: 0,
            duration_ms: 2_000,
        }]
    );
    assert!(
        p.counters_rollup(&CountersRollupParams { now: at(8 * day) })
            .await
            .unwrap()
            > 0
    );
    let hourly = p
        .counters(&CountersParams { name, since: t0() })
        .await
        .unwrap();
    assert_eq!(
        (hourly.len(), hourly[0].width_secs, hourly[0].done),
        (1, 3600, 2)
    );
    assert_eq!(
        p.counter_totals(&CounterTotalsParams { since: t0() })
            .await
            .unwrap()[0]
            .done,
        2
    );
    assert!(
        p.counters_rollup(&CountersRollupParams { now: at(31 * day) })
            .await
            .unwrap()
            > 0
    );
    assert!(
        p.counters(&CountersParams { name, since: t0() })
            .await
            .unwrap()
            .is_empty(),
        "past 30 days: dropped"
    );
}
