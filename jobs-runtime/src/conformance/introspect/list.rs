//! `job_list`: pages newest first both ways, every filter, and the refusals of a bad limit or
//! a foreign cursor.

use super::*;

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

/// A list of every state holds every job newest first, whatever state each is in (ready,
/// running, delayed, done, dead), paged both ways across them.
pub async fn job_list_merges_every_state_newest_first(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let done = enqueue(d, &request_at("merge.job", "k1", at(1))).await.id;
    let job = claim_one(d, "w", at(1)).await;
    assert!(ack(d, job.id, &job.by, at(1)).await);
    let running = enqueue(d, &request_at("merge.job", "k2", at(2))).await.id;
    assert_eq!(claim_one(d, "w", at(2)).await.id, running);
    let dead = enqueue(d, &request_at("merge.job", "k3", at(3))).await.id;
    assert_eq!(run_dead(d, "w", at(3)).await.id, dead);
    let mut later = request_at("merge.job", "k4", at(4));
    later.run_at = at(100_000);
    let delayed = enqueue(d, &later).await.id;
    let ready = enqueue(d, &request_at("merge.job", "k5", at(5))).await.id;
    let newest = enqueue(d, &request_at("merge.job", "k6", at(6))).await.id;

    let whole = list(p, JobListParams::default()).await;
    assert_eq!(ids(&whole), [newest, ready, delayed, dead, running, done]);
    let states: Vec<JobState> = whole.jobs.iter().map(|j| j.state).collect();
    assert_eq!(
        states,
        [
            JobState::Ready,
            JobState::Ready,
            JobState::Delayed,
            JobState::Dead,
            JobState::Running,
            JobState::Done,
        ]
    );
    let pages = |after: Option<String>, before: Option<String>| JobListParams {
        limit: Some(2),
        after,
        before,
        ..JobListParams::default()
    };
    let first = list(p, pages(None, None)).await;
    assert_eq!(ids(&first), [newest, ready]);
    let second = list(p, pages(first.after.clone(), None)).await;
    assert_eq!(ids(&second), [delayed, dead]);
    let third = list(p, pages(second.after.clone(), None)).await;
    assert_eq!(ids(&third), [running, done]);
    let back = list(p, pages(None, third.before.clone())).await;
    assert_eq!(
        ids(&back),
        [delayed, dead],
        "the previous page, across states"
    );
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
