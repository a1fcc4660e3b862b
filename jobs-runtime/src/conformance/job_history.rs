//! A job's history ([`JobIntrospection::job_history`]): every operator act on a job (requeue,
//! requeue from a step, cancel, promote, remove, and the bulk verbs, one row per job moved)
//! appends who did it, when and what, in the act's own statement or transaction; a refused act
//! appends nothing; a tenant's operator reads only its tenant's rows; the purge of finished jobs
//! takes the history of the jobs it deletes; an actor out of bounds is refused before anything
//! is written, the same way on every driver.
//!
//! The port cases call the driver with explicit times; the tenant and actor cases go through a
//! [`Jobs`] client (its scope and its checks are the client's, ahead of every driver).

use std::sync::Arc;

use uuid::Uuid;

use super::*;
use crate::client::Jobs;
use crate::clock::TestClock;
use crate::driver::introspect::*;
use crate::driver::introspect::{JobPromoteParams, JobRemoveParams};
use crate::driver::{JobCancelParams, JobPurgeParams, StepPutParams};
use crate::limits::MAX_ACTOR_BYTES;

/// The operator port: a driver without one fails these cases loudly, never skips them.
fn port(driver: &dyn JobDriver) -> &dyn JobIntrospection {
    driver.introspect().unwrap_or_else(|| {
        panic!(
            "the `{}` driver has no introspection: the history cases need one",
            driver.name()
        )
    })
}

/// `id`'s history through the port, newest first, every row.
async fn history(p: &dyn JobIntrospection, id: JobId) -> Vec<JobHistoryEntry> {
    p.job_history(&JobHistoryParams {
        id,
        tenant_id: None,
        limit: Some(MAX_HISTORY_PAGE),
    })
    .await
    .unwrap_or_else(|e| panic!("job_history failed: {e}"))
}

/// `(verb, actor, detail, at)` of each row.
fn acts(rows: &[JobHistoryEntry]) -> Vec<(&str, Option<&str>, Option<&str>, Timestamp)> {
    rows.iter()
        .map(|r| {
            (
                r.verb.as_str(),
                r.actor.as_deref(),
                r.detail.as_deref(),
                r.at,
            )
        })
        .collect()
}

fn actor(name: &str) -> Option<String> {
    Some(name.to_string())
}

fn cancel(id: JobId, by: Option<&str>, now: Timestamp) -> JobCancelParams {
    JobCancelParams {
        reason: None,
        id,
        actor: by.map(str::to_string),
        now,
    }
}

fn promote(id: JobId, by: Option<&str>, now: Timestamp) -> JobPromoteParams {
    JobPromoteParams {
        id,
        actor: by.map(str::to_string),
        now,
    }
}

fn remove(id: JobId, by: Option<&str>, now: Timestamp) -> JobRemoveParams {
    JobRemoveParams {
        id,
        actor: by.map(str::to_string),
        now,
    }
}

fn requeue(id: JobId, from: Option<&str>, by: Option<&str>, now: Timestamp) -> JobRequeueParams {
    JobRequeueParams {
        id,
        from_step: from.map(str::to_string),
        actor: by.map(str::to_string),
        now,
    }
}

fn bulk(state: JobState, name: &str, by: &str, now: Timestamp) -> JobBulkParams {
    JobBulkParams {
        state,
        queue: Some(QUEUE.into()),
        name: Some(name.into()),
        tenant_id: None,
        actor: actor(by),
        now,
    }
}

/// Claims every due job of [`QUEUE`] at `now` and dead-letters each.
async fn kill_all(d: &dyn JobDriver, now: Timestamp) -> Vec<JobId> {
    let claimed = claim(d, &claim_params("w1", 100, now)).await;
    let mut ids = Vec::new();
    for job in claimed.jobs {
        let params = nack_params(job.id, &job.by, NackTarget::DeadLetter, now, now);
        assert!(nack(d, &params).await);
        ids.push(job.id);
    }
    ids
}

/// Each verb appends its row with the actor it names (or none), the verb and its detail (the
/// step a requeue starts from), at the act's `now`; the read is newest first and bounded; a
/// refused act appends nothing.
pub async fn job_history_records_each_verb_with_its_actor(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let id = enqueue_key(d, "k").await;
    let job = claim_one(d, "w1", t0()).await;
    let fence = StepFence {
        job_id: id,
        by: job.by.clone(),
    };
    for (n, name) in ["a", "b"].into_iter().enumerate() {
        let record = StepRecord {
            run_id: job.run_id,
            name: name.into(),
            status: StepStatus::Completed,
            output: Some(serde_json::json!(n)),
            error: None,
            attempts: 1,
            wake_at: None,
            wait: None,
            updated_at: at(n as i64 + 1),
        };
        let put = StepPutParams {
            record: &record,
            fence: &fence,
        };
        assert!(d.step_put(&put).await.unwrap());
    }
    let params = nack_params(id, &job.by, NackTarget::DeadLetter, at(3), at(3));
    assert!(nack(d, &params).await);
    assert!(history(p, id).await.is_empty(), "a settle is not an act");

    // Refused acts write no row.
    assert_refused(
        p.job_promote(&promote(id, Some("mallory"), at(4))).await,
        ErrorCode::JobNotPromotable,
    );
    assert_refused(
        d.job_cancel(&cancel(id, Some("mallory"), at(4))).await,
        ErrorCode::JobNotCancellable,
    );
    assert_refused(
        p.job_requeue(&requeue(id, Some("nope"), Some("mallory"), at(4)))
            .await,
        ErrorCode::Invariant,
    );
    assert!(history(p, id).await.is_empty(), "a refusal is not recorded");

    p.job_requeue(&requeue(id, Some("b"), Some("alice"), at(5)))
        .await
        .expect("requeued from a step");
    // A cancel's reason is its row's detail.
    d.job_cancel(&JobCancelParams {
        reason: Some("customer asked".into()),
        ..cancel(id, Some("bob"), at(6))
    })
    .await
    .expect("cancelled");
    assert_refused(
        d.job_cancel(&cancel(id, Some("mallory"), at(6))).await,
        ErrorCode::JobNotCancellable,
    );
    p.job_requeue(&requeue(id, None, None, at(7)))
        .await
        .expect("requeued");
    // Backing off, then made due now.
    let job = claim_one(d, "w1", at(8)).await;
    let retry = nack_params(id, &job.by, NackTarget::Retry, at(600), at(9));
    assert!(nack(d, &retry).await);
    p.job_promote(&promote(id, Some("carol"), at(10)))
        .await
        .expect("promoted");
    let job = claim_one(d, "w1", at(11)).await;
    assert!(ack(d, id, &job.by, at(12)).await);
    p.job_remove(&remove(id, Some("dave"), at(13)))
        .await
        .expect("removed");
    assert_refused(
        p.job_remove(&remove(id, Some("mallory"), at(14))).await,
        ErrorCode::JobNotFound,
    );

    let rows = history(p, id).await;
    assert!(rows.iter().all(|r| r.job_id == id));
    assert_eq!(
        acts(&rows),
        [
            ("remove", Some("dave"), None, at(13)),
            ("promote", Some("carol"), None, at(10)),
            ("requeue", None, None, at(7)),
            ("cancel", Some("bob"), Some("customer asked"), at(6)),
            ("requeue_from_step", Some("alice"), Some("b"), at(5)),
        ],
        "newest first; a removed job's history stays"
    );

    // Bounded, newest first.
    let two = p
        .job_history(&JobHistoryParams {
            id,
            tenant_id: None,
            limit: Some(2),
        })
        .await
        .unwrap();
    assert_eq!(two, rows[..2]);
    for limit in [0, MAX_HISTORY_PAGE + 1] {
        assert_refused(
            p.job_history(&JobHistoryParams {
                id,
                tenant_id: None,
                limit: Some(limit),
            })
            .await,
            ErrorCode::JobPageInvalid,
        );
    }
    assert!(history(p, Uuid::now_v7()).await.is_empty());
}

/// A bulk verb appends one row per job it moves (`bulk` detail), none for a row it leaves.
pub async fn job_history_records_one_row_per_job_a_bulk_verb_moves(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    for n in 0..3 {
        enqueue(d, &request("bulk.job", &format!("k{n}"))).await;
    }
    let other = enqueue(d, &request("bulk.other", "o")).await.id;
    let dead = kill_all(d, at(1)).await;
    assert_eq!(dead.len(), 4);
    let mut later = Vec::new();
    for n in 0..2 {
        let mut r = request("bulk.later", &format!("l{n}"));
        r.run_at = at(3600);
        later.push(enqueue(d, &r).await.id);
    }

    let moved = p
        .job_requeue_many(&bulk(JobState::Dead, "bulk.job", "ops-1", at(2)))
        .await
        .unwrap();
    assert_eq!(moved.affected, 3);
    let promoted = p
        .job_promote_many(&bulk(JobState::Delayed, "bulk.later", "ops-2", at(3)))
        .await
        .unwrap();
    assert_eq!(promoted.affected, 2);
    let removed = p
        .job_remove_many(&bulk(JobState::Ready, "bulk.job", "ops-3", at(4)))
        .await
        .unwrap();
    assert_eq!(removed.affected, 3);

    for id in dead.iter().filter(|id| **id != other) {
        assert_eq!(
            acts(&history(p, *id).await),
            [
                ("remove", Some("ops-3"), Some(BULK_DETAIL), at(4)),
                ("requeue", Some("ops-1"), Some(BULK_DETAIL), at(2)),
            ],
            "one row per verb for each job it moved"
        );
    }
    for id in later {
        assert_eq!(
            acts(&history(p, id).await),
            [("promote", Some("ops-2"), Some(BULK_DETAIL), at(3))]
        );
    }
    assert!(
        history(p, other).await.is_empty(),
        "a row the filter left out has no history"
    );
}

/// A client scoped to a tenant reads only the rows written while the job was its tenant's,
/// before and after the job is removed; the port's tenant filter is the same rule.
pub async fn job_history_of_a_tenant_scoped_operator_shows_only_its_tenant(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let p = port(d);
    let jobs = Jobs::with_clock(driver.clone(), Arc::new(TestClock::at(t0())));
    let mut mine = request("tenant.job", "k");
    mine.tenant_id = Some("acme".into());
    let mine = enqueue(d, &mine).await.id;
    let mut theirs = request("tenant.job", "k");
    theirs.tenant_id = Some("globex".into());
    let theirs = enqueue(d, &theirs).await.id;
    let acme = jobs.for_tenant("acme").acting_as("ann@acme");
    let globex = jobs.for_tenant("globex").acting_as("gus@globex");

    acme.operator().cancel(mine).await.expect("acme's own job");
    globex
        .operator()
        .cancel(theirs)
        .await
        .expect("globex's own job");
    assert_refused(
        acme.operator().requeue(theirs, None).await,
        ErrorCode::JobNotFound,
    );
    assert_refused(acme.operator().remove(theirs).await, ErrorCode::JobNotFound);

    let seen = acme.operator().history(mine).await.unwrap();
    assert_eq!(
        acts(&seen),
        [
            ("cancel", Some("ann@acme"), None, t0()),
            ("enqueue", None, None, t0()),
        ],
        "the job's enqueue ends its history"
    );
    assert!(
        acme.operator().history(theirs).await.unwrap().is_empty(),
        "another tenant's job shows no history"
    );
    assert_eq!(
        acts(&jobs.operator().history(theirs).await.unwrap()),
        [
            ("cancel", Some("gus@globex"), None, t0()),
            ("enqueue", None, None, t0()),
        ],
        "a refused act by another tenant wrote nothing"
    );

    // Removed: the rows stay, still the tenant's alone.
    acme.operator().remove(mine).await.expect("removed");
    assert_eq!(
        acts(&acme.operator().history(mine).await.unwrap()),
        [
            ("remove", Some("ann@acme"), None, t0()),
            ("cancel", Some("ann@acme"), None, t0()),
        ]
    );
    assert!(globex.operator().history(mine).await.unwrap().is_empty());
    let filtered = p
        .job_history(&JobHistoryParams {
            id: mine,
            tenant_id: Some("globex".into()),
            limit: None,
        })
        .await
        .unwrap();
    assert!(filtered.is_empty());
    let detail = globex.operator().inspect_job(theirs).await.unwrap();
    assert_eq!(
        detail.history.len(),
        2,
        "a job's detail carries its history"
    );
}

/// The purge takes the history of the jobs it deletes, and a removed job's history once it is
/// older than the later cutoff; a stored job keeps its history, a recent removal's stays.
pub async fn job_purge_deletes_the_history_of_the_jobs_it_purges(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    // Done at 4, after a cancel and a requeue.
    let done = enqueue_key(d, "done").await;
    d.job_cancel(&cancel(done, Some("ops"), at(1)))
        .await
        .unwrap();
    p.job_requeue(&requeue(done, None, Some("ops"), at(2)))
        .await
        .unwrap();
    let job = claim_one(d, "w1", at(3)).await;
    assert!(ack(d, done, &job.by, at(4)).await);
    // Cancelled at 5; cancelled at 100 (inside its window).
    let old = enqueue_key(d, "old").await;
    d.job_cancel(&cancel(old, Some("ops"), at(5)))
        .await
        .unwrap();
    let kept = enqueue_key(d, "kept").await;
    d.job_cancel(&cancel(kept, Some("ops"), at(100)))
        .await
        .unwrap();
    // Removed at 6, and at 200.
    let gone = enqueue_key(d, "gone").await;
    p.job_remove(&remove(gone, Some("ops"), at(6)))
        .await
        .unwrap();
    let recent = enqueue_key(d, "recent").await;
    p.job_remove(&remove(recent, Some("ops"), at(200)))
        .await
        .unwrap();

    let purged = d
        .job_purge(&JobPurgeParams {
            done_before: at(40),
            finished_before: at(50),
            limit: 100,
        })
        .await
        .unwrap();
    assert_eq!(purged, 2, "the done and the old cancelled job");
    assert!(
        history(p, done).await.is_empty(),
        "a purged job's history goes"
    );
    assert!(
        history(p, old).await.is_empty(),
        "a purged job's history goes"
    );
    assert!(
        history(p, gone).await.is_empty(),
        "a removed job's history goes once past the later cutoff"
    );
    assert_eq!(
        history(p, kept).await.len(),
        1,
        "a stored job keeps its history"
    );
    assert_eq!(
        history(p, recent).await.len(),
        1,
        "a recent removal's history stays"
    );
}

/// An actor over [`MAX_ACTOR_BYTES`] is `X_LIMIT_EXCEEDED`, one holding a control character
/// `X_VALUE_UNSTORABLE`, on every operator act, before anything is written, never echoed; one
/// at the limit is stored whole.
pub async fn job_history_refuses_an_actor_out_of_bounds_before_any_write(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let p = port(d);
    let jobs = Jobs::with_clock(driver.clone(), Arc::new(TestClock::at(t0())));
    let live = enqueue_key(d, "live").await;
    let mut later = request("conformance.job", "later");
    later.run_at = at(3600);
    let delayed = enqueue(d, &later).await.id;
    let long = format!("secret{}", "a".repeat(MAX_ACTOR_BYTES));
    for (bad, code) in [
        (long.as_str(), ErrorCode::LimitExceeded),
        ("secret\nactor", ErrorCode::ValueUnstorable),
        ("secret\u{1b}[2Jactor", ErrorCode::ValueUnstorable),
        ("secret\0actor", ErrorCode::ValueUnstorable),
    ] {
        let ops = jobs.acting_as(bad);
        let operator = ops.operator();
        let bulk_params = JobBulkParams {
            state: JobState::Delayed,
            queue: None,
            name: None,
            tenant_id: None,
            actor: None,
            now: t0(),
        };
        let refusals = [
            operator.cancel(live).await.map(drop),
            operator.remove(live).await.map(drop),
            operator.promote(delayed).await.map(drop),
            operator.requeue(live, None).await.map(drop),
            operator.pause_queue(QUEUE).await,
            operator.promote_many(&bulk_params).await.map(drop),
            jobs.operator()
                .promote_many(&JobBulkParams {
                    actor: Some(bad.to_string()),
                    ..bulk_params.clone()
                })
                .await
                .map(drop),
        ];
        for refused in refusals {
            let message = refused
                .as_ref()
                .err()
                .map(ToString::to_string)
                .unwrap_or_default();
            assert!(!message.contains("secret"), "not echoed: {message}");
            assert_refused(refused, code);
        }
    }
    assert_eq!(get(d, live).await.state, JobState::Ready);
    assert_eq!(get(d, delayed).await.state, JobState::Delayed);
    assert!(history(p, live).await.is_empty() && history(p, delayed).await.is_empty());
    assert!(p.queue_paused().await.unwrap().is_empty());

    // At the limit, in bytes: stored whole, on the job and on a pause.
    let widest = "é".repeat(MAX_ACTOR_BYTES / 2);
    let ops = jobs.acting_as(widest.clone());
    ops.operator()
        .cancel(live)
        .await
        .expect("an actor at the limit");
    ops.operator().pause_queue(QUEUE).await.unwrap();
    assert_eq!(history(p, live).await[0].actor.as_deref(), Some(&*widest));
    assert_eq!(
        p.queue_paused().await.unwrap()[0].paused_by.as_deref(),
        Some(&*widest)
    );
}
