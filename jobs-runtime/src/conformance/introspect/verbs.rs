//! The one-job verbs: remove, requeue (whole, or from a step) and promote, with each one's
//! refusals.

use super::*;

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
        reason: None,
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

/// An operator's requeue and promote keep a job's priority, and a list row carries it: a
/// requeued dead letter of priority 4 is claimed before an older row of the default.
pub async fn job_requeue_and_promote_keep_the_priority(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let mut urgent = request("conformance.job", "urgent");
    urgent.priority = 4;
    enqueue(d, &urgent).await;
    let dead = run_dead(d, "w1", at(1)).await;
    assert_eq!(dead.id, urgent.id);
    let plain = enqueue(d, &request_at("conformance.job", "plain", at(2)))
        .await
        .id;
    let row = p
        .job_requeue(&JobRequeueParams {
            id: urgent.id,
            from_step: None,
            now: at(3),
            actor: None,
        })
        .await
        .expect("requeued");
    assert_eq!(row.priority, 4, "the requeue keeps the priority");
    let page = list(p, JobListParams::default()).await;
    let listed = page
        .jobs
        .iter()
        .find(|j| j.id == urgent.id)
        .expect("listed");
    assert_eq!(listed.priority, 4, "a list row carries the priority");
    let plain_row = page.jobs.iter().find(|j| j.id == plain).expect("listed");
    assert_eq!(plain_row.priority, DEFAULT_PRIORITY);
    assert_eq!(claim_one(d, "w2", at(4)).await.id, urgent.id);

    let mut later = request("conformance.job", "later");
    later.priority = -4;
    later.run_at = at(3600);
    enqueue(d, &later).await;
    let row = p
        .job_promote(&JobPromoteParams {
            id: later.id,
            now: at(5),
            actor: None,
        })
        .await
        .expect("promoted");
    assert_eq!(row.priority, -4, "the promote keeps the priority");
    assert_eq!(claim_one(d, "w2", at(6)).await.id, plain);
    assert_eq!(claim_one(d, "w2", at(6)).await.id, later.id);
}
