//! The bulk verbs: the states each refuses, the 1,000-row bound per call with `remaining`, and
//! how `requeue_many` treats keys a live job holds.

use super::*;

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
