//! Groups of jobs beyond the conformance cases, on every store: members in another queue than
//! their group ended every way (ack, dead letter, cancel, a dependency's cancel, a removal, a
//! bulk removal, a lapsed claim buried), each counted once; a requeued member not counted
//! again; a parent's cancel following its children across queues with a history row each; a
//! purged waiter's groups dropped; 10,000 children joined, acked in batches, paged back and
//! cancelled; the last settle racing the parent's park and wake; children settled side by side
//! while their join runs. Each case runs on memory, SQLite, Postgres, Redis and a Redis Cluster.

use std::sync::Arc;
use std::time::Duration;

use jobs::driver::introspect::{JobHistoryParams, JobRemoveParams, JobRequeueParams};
use jobs::driver::*;
use jobs::ErrorCode;
use uuid::Uuid;

use crate::support;

type Ts = chrono::DateTime<chrono::Utc>;

fn t0() -> Ts {
    chrono::DateTime::parse_from_rfc3339("2030-01-01T00:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc)
}
fn at(s: i64) -> Ts {
    t0() + chrono::Duration::seconds(s)
}

fn req(queue: &str, key: &str, run_at: Ts) -> EnqueueRequest {
    support::request::request("scratch.job", queue, key, run_at, t0())
}

async fn enq(d: &dyn JobDriver, queue: &str, key: &str, run_at: Ts) -> JobId {
    d.job_enqueue(&req(queue, key, run_at)).await.unwrap().id
}

async fn claim(d: &dyn JobDriver, queue: &str, limit: u32, now: Ts) -> Vec<ClaimedJob> {
    d.job_claim(&ClaimParams {
        demand: vec![QueueDemand {
            queue: queue.into(),
            limit,
        }],
        worker_id: "w".into(),
        visibility_timeout: Duration::from_secs(60),
        drop_exhausted: Vec::new(),
        fair_after: String::new(),
        now,
    })
    .await
    .unwrap()
    .jobs
}

async fn park(d: &dyn JobDriver, job: &ClaimedJob, until: Ts, now: Ts) {
    assert!(d
        .job_nack(&NackParams {
            job_id: job.id,
            by: job.by.clone(),
            target: NackTarget::Park,
            run_at: until,
            counts_as_attempt: false,
            error: None,
            error_code: None,
            now,
        })
        .await
        .unwrap());
}

async fn state(d: &dyn JobDriver, id: JobId) -> Option<JobState> {
    d.job_get(&JobGetParams { id })
        .await
        .unwrap()
        .map(|j| j.state)
}

async fn group(d: &dyn JobDriver, g: GroupId) -> GroupRecord {
    d.job_group_get(g).await.unwrap().unwrap()
}

async fn join(
    d: &dyn JobDriver,
    g: GroupId,
    waiter: JobId,
    parent: Option<JobId>,
    members: &[JobId],
    need: GroupNeed,
    now: Ts,
) -> GroupRecord {
    d.job_group_join(&GroupJoinParams {
        group: g,
        waiter,
        parent,
        members,
        need,
        now,
    })
    .await
    .unwrap()
}

/// `n` children on `queue`, due at 1 s, enqueued a thousand a call.
async fn enqueue_kids(d: &dyn JobDriver, queue: &str, n: usize) -> Vec<JobId> {
    let mut kids = Vec::with_capacity(n);
    for chunk in 0..n.div_ceil(1000) {
        let reqs: Vec<_> = (chunk * 1000..((chunk + 1) * 1000).min(n))
            .map(|i| req(queue, &format!("kid-{i}"), at(1)))
            .collect();
        let enqueued = d.job_enqueue_many(&reqs).await.unwrap();
        kids.extend(enqueued.into_iter().map(|r| r.id));
    }
    kids
}

async fn scale(d: Arc<dyn JobDriver>) {
    let d = &*d;
    let n = 10_000usize;
    let parent = enq(d, "qa", "parent", t0()).await;
    let p = claim(d, "qa", 1, t0()).await.remove(0);
    park(d, &p, at(100_000), t0()).await;
    let kids = enqueue_kids(d, "qa", n).await;
    let g = Uuid::now_v7();
    let joined = join(d, g, parent, Some(parent), &kids, GroupNeed::All, at(1)).await;
    assert_eq!(
        (joined.size, joined.settled, joined.need),
        (n as u32, 0, Some(n as u32))
    );
    let mut acked = 0;
    while acked < n {
        let batch = claim(d, "qa", 500, at(2)).await;
        assert!(!batch.is_empty());
        let acks: Vec<_> = batch
            .iter()
            .map(|j| AckParams {
                job_id: j.id,
                by: j.by.clone(),
                result: Some(serde_json::json!(j.id.to_string())),
                now: at(3),
            })
            .collect();
        assert!(d.job_ack_many(&acks).await.unwrap().iter().all(|l| *l));
        acked += batch.len();
        let g = group(d, g).await;
        assert_eq!(g.settled as usize, acked);
        if acked < n {
            assert_eq!(state(d, parent).await, Some(JobState::Suspended));
        }
    }
    let done = group(d, g).await;
    assert_eq!(done.done_at, Some(at(3)));
    let row = d
        .job_get(&JobGetParams { id: parent })
        .await
        .unwrap()
        .unwrap();
    assert_eq!((row.state, row.run_at), (JobState::Ready, at(3)));
    let mut after = None;
    let mut read = 0usize;
    loop {
        let page = d
            .job_group_members(&GroupMembersParams {
                group: g,
                after,
                limit: 5_000,
            })
            .await
            .unwrap();
        assert!(page.len() <= GROUP_PAGE as usize);
        let Some(last) = page.last() else { break };
        for m in &page {
            assert_eq!(m.id, kids[m.position as usize]);
            assert_eq!(m.state, Some(JobState::Done));
            assert_eq!(m.result, Some(serde_json::json!(m.id.to_string())));
        }
        read += page.len();
        after = Some(last.position);
    }
    assert_eq!(read, n);
    let links = d.job_links(parent).await.unwrap();
    assert_eq!(links.children.len(), MAX_DEPENDENCIES);
    assert_eq!(links.children[0], (kids[0], Some(JobState::Done)));
}

async fn scale_cancel(d: Arc<dyn JobDriver>) {
    let d = &*d;
    let n = 10_000usize;
    let parent = enq(d, "qc", "parent", t0()).await;
    let p = claim(d, "qc", 1, t0()).await.remove(0);
    park(d, &p, at(100_000), t0()).await;
    let kids = enqueue_kids(d, "qc", n).await;
    let g = Uuid::now_v7();
    join(d, g, parent, Some(parent), &kids, GroupNeed::All, at(1)).await;
    d.job_cancel(&JobCancelParams {
        reason: None,
        id: parent,
        actor: Some("ops".into()),
        now: at(5),
    })
    .await
    .unwrap();
    assert_eq!(group(d, g).await.settled as usize, n);
    for id in kids.iter().step_by(997) {
        assert_eq!(state(d, *id).await, Some(JobState::Cancelled));
    }
    assert!(claim(d, "qc", 10, at(10)).await.is_empty());
}

/// Members in another queue than the group, ended every way, each counted once.
async fn every_path(d: Arc<dyn JobDriver>) {
    let d = &*d;
    let ops = d.introspect().unwrap();
    let parent = enq(d, "qp", "parent", t0()).await;
    let p = claim(d, "qp", 1, t0()).await.remove(0);
    park(d, &p, at(100_000), t0()).await;
    // c0 done before the join.
    let c0 = enq(d, "qc", "c0", t0()).await;
    let j = claim(d, "qc", 1, t0()).await.remove(0);
    d.job_ack(&AckParams {
        job_id: c0,
        by: j.by,
        result: Some(serde_json::json!("zero")),
        now: t0(),
    })
    .await
    .unwrap();
    let gone = Uuid::now_v7();
    let c: Vec<JobId> = {
        let mut v = Vec::new();
        for i in 1..=6 {
            let mut r = req("qc", &format!("c{i}"), at(i));
            if i == 6 {
                r.max_attempts = 1;
            }
            v.push(d.job_enqueue(&r).await.unwrap().id);
        }
        v
    };
    let mut members = vec![c0, gone];
    members.extend(&c);
    let g = Uuid::now_v7();
    let joined = join(d, g, parent, Some(parent), &members, GroupNeed::All, at(1)).await;
    assert_eq!(
        (joined.size, joined.settled),
        (8, 2),
        "done and gone count at the join"
    );
    let again = join(d, g, parent, Some(parent), &members, GroupNeed::All, at(1)).await;
    assert_eq!((again.size, again.settled), (8, 2), "replayed");
    // c1: single ack.
    let j1 = claim(d, "qc", 1, at(1)).await.remove(0);
    assert_eq!(j1.id, c[0]);
    d.job_ack(&AckParams {
        job_id: c[0],
        by: j1.by,
        result: None,
        now: at(1),
    })
    .await
    .unwrap();
    assert_eq!(group(d, g).await.settled, 3);
    // c2: ack many (with an unrelated job).
    let other = enq(d, "qc", "other", at(2)).await;
    let batch = claim(d, "qc", 2, at(2)).await;
    assert_eq!(batch.len(), 2);
    let acks: Vec<_> = batch
        .iter()
        .map(|j| AckParams {
            job_id: j.id,
            by: j.by.clone(),
            result: None,
            now: at(2),
        })
        .collect();
    d.job_ack_many(&acks).await.unwrap();
    assert!(batch.iter().any(|j| j.id == other));
    assert_eq!(group(d, g).await.settled, 4);
    // c3: nack dead.
    let j3 = claim(d, "qc", 1, at(3)).await.remove(0);
    assert_eq!(j3.id, c[2]);
    d.job_nack(&NackParams {
        job_id: c[2],
        by: j3.by,
        target: NackTarget::DeadLetter,
        run_at: at(3),
        counts_as_attempt: true,
        error: Some("boom".into()),
        error_code: Some(ErrorCode::Invariant.as_str().into()),
        now: at(3),
    })
    .await
    .unwrap();
    assert_eq!(group(d, g).await.settled, 5);
    // c4: cancel while queued.
    d.job_cancel(&JobCancelParams {
        reason: None,
        id: c[3],
        actor: None,
        now: at(3),
    })
    .await
    .unwrap();
    assert_eq!(group(d, g).await.settled, 6);
    // c5: removed while queued.
    ops.job_remove(&JobRemoveParams {
        id: c[4],
        actor: Some("ops".into()),
        now: at(3),
    })
    .await
    .unwrap();
    assert_eq!(group(d, g).await.settled, 7);
    assert_eq!(state(d, parent).await, Some(JobState::Suspended));
    // c6: a lapsed last attempt, buried by the next claim.
    let j6 = claim(d, "qc", 1, at(6)).await.remove(0);
    assert_eq!(j6.id, c[5]);
    assert!(claim(d, "qc", 1, at(200)).await.is_empty());
    assert_eq!(state(d, c[5]).await, Some(JobState::Dead));
    let done = group(d, g).await;
    assert_eq!((done.settled, done.done_at), (8, Some(at(200))));
    let row = d
        .job_get(&JobGetParams { id: parent })
        .await
        .unwrap()
        .unwrap();
    assert_eq!((row.state, row.run_at), (JobState::Ready, at(200)));
    // Requeue a counted member and end it again: no second count.
    ops.job_requeue(&JobRequeueParams {
        id: c[0],
        from_step: None,
        actor: None,
        now: at(300),
    })
    .await
    .unwrap();
    let again = claim(d, "qc", 1, at(300)).await.remove(0);
    d.job_ack(&AckParams {
        job_id: c[0],
        by: again.by,
        result: None,
        now: at(300),
    })
    .await
    .unwrap();
    d.job_release_pending(at(301)).await.unwrap();
    assert_eq!(group(d, g).await.settled, 8);
    // Requeued, joined to a new group while live, then ended: counts in the new one only.
    ops.job_requeue(&JobRequeueParams {
        id: c[1],
        from_step: None,
        actor: None,
        now: at(400),
    })
    .await
    .unwrap();
    let g2 = Uuid::now_v7();
    let w2 = enq(d, "qp", "w2", at(500_000)).await;
    let second = join(d, g2, w2, None, &[c[1]], GroupNeed::All, at(400)).await;
    assert_eq!(second.settled, 0);
    let j = claim(d, "qc", 1, at(400)).await.remove(0);
    d.job_ack(&AckParams {
        job_id: c[1],
        by: j.by,
        result: None,
        now: at(401),
    })
    .await
    .unwrap();
    assert_eq!(group(d, g2).await.settled, 1);
    assert_eq!(group(d, g).await.settled, 8);
    // Links and pages across queues.
    let links = d.job_links(parent).await.unwrap();
    assert_eq!(links.children.len(), 8);
    assert_eq!(links.children[0], (c0, Some(JobState::Done)));
    assert_eq!(links.children[1], (gone, None));
    assert_eq!(links.children[4], (c[2], Some(JobState::Dead)));
    assert_eq!(links.children[6], (c[4], None), "removed");
    assert_eq!(d.job_links(c[2]).await.unwrap().parent, Some(parent));
    assert_eq!(d.job_links(c[1]).await.unwrap().batch, Some(g2));
    let page = d
        .job_group_members(&GroupMembersParams {
            group: g,
            after: Some(0),
            limit: 3,
        })
        .await
        .unwrap();
    assert_eq!(
        page.iter().map(|m| m.position).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!((page[0].id, page[0].state), (gone, None));
    assert_eq!(page[1].state, Some(JobState::Done));
    let first = d
        .job_group_members(&GroupMembersParams {
            group: g,
            after: None,
            limit: 1,
        })
        .await
        .unwrap();
    assert_eq!(first[0].result, Some(serde_json::json!("zero")));
    let dead = d
        .job_group_members(&GroupMembersParams {
            group: g,
            after: Some(3),
            limit: 1,
        })
        .await
        .unwrap();
    assert_eq!(dead[0].last_error.as_deref(), Some("boom"));
    assert_eq!(dead[0].last_error_code.as_deref(), Some("X_INVARIANT"));
    assert!(d.job_group_get(Uuid::now_v7()).await.unwrap().is_none());
}

/// A cascade across queues, with its history rows.
async fn cascade(d: Arc<dyn JobDriver>) {
    let d = &*d;
    let ops = d.introspect().unwrap();
    let parent = enq(d, "qp", "parent", t0()).await;
    let p = claim(d, "qp", 1, t0()).await.remove(0);
    park(d, &p, at(100_000), t0()).await;
    let kid = enq(d, "qc", "kid", t0()).await;
    let k = claim(d, "qc", 1, t0()).await.remove(0);
    let grandkid = enq(d, "qp", "grandkid", at(1000)).await;
    let g = Uuid::now_v7();
    join(d, g, parent, Some(parent), &[kid], GroupNeed::All, t0()).await;
    let g2 = Uuid::now_v7();
    join(d, g2, kid, Some(kid), &[grandkid], GroupNeed::All, t0()).await;
    park(d, &k, at(100_000), t0()).await;
    d.job_cancel(&JobCancelParams {
        reason: None,
        id: parent,
        actor: Some("ops".into()),
        now: at(5),
    })
    .await
    .unwrap();
    for id in [parent, kid, grandkid] {
        assert_eq!(state(d, id).await, Some(JobState::Cancelled));
        let history = ops
            .job_history(&JobHistoryParams {
                id,
                tenant_id: None,
                limit: None,
            })
            .await
            .unwrap();
        assert_eq!(history.len(), 1, "{history:?}");
        assert_eq!(
            (history[0].verb.as_str(), history[0].actor.as_deref()),
            ("cancel", Some("ops"))
        );
    }
    assert_eq!(group(d, g).await.settled, 1);
    assert_eq!(group(d, g2).await.settled, 1);
}

/// The purge drops a purged waiter's groups once every member was counted, and leaves one
/// still counting a live member until that member is counted.
async fn purge(d: Arc<dyn JobDriver>) {
    let d = &*d;
    let waiter = enq(d, "qp", "waiter", t0()).await;
    let live = enq(d, "qc", "live", at(10_000)).await;
    let ended = enq(d, "qc", "ended", t0()).await;
    let j = claim(d, "qc", 1, t0()).await.remove(0);
    d.job_ack(&AckParams {
        job_id: ended,
        by: j.by,
        result: None,
        now: t0(),
    })
    .await
    .unwrap();
    let complete = Uuid::now_v7();
    join(d, complete, waiter, None, &[ended], GroupNeed::All, t0()).await;
    let open = Uuid::now_v7();
    join(d, open, waiter, None, &[live], GroupNeed::All, t0()).await;
    let w = claim(d, "qp", 1, t0()).await.remove(0);
    d.job_ack(&AckParams {
        job_id: waiter,
        by: w.by,
        result: None,
        now: t0(),
    })
    .await
    .unwrap();
    d.job_purge(&JobPurgeParams {
        done_before: at(1),
        finished_before: at(1),
        limit: 100,
    })
    .await
    .unwrap();
    assert_eq!(state(d, waiter).await, None);
    assert!(
        d.job_group_get(complete).await.unwrap().is_none(),
        "complete: dropped"
    );
    assert!(
        d.job_group_get(open).await.unwrap().is_some(),
        "still counting a live member"
    );
    let j = claim(d, "qc", 1, at(10_000)).await.remove(0);
    assert_eq!(j.id, live);
    d.job_ack(&AckParams {
        job_id: live,
        by: j.by,
        result: None,
        now: at(10_000),
    })
    .await
    .unwrap();
    // Dropped at its last count (memory, Redis) or by the next purge (SQLite, Postgres).
    d.job_purge(&JobPurgeParams {
        done_before: at(1),
        finished_before: at(1),
        limit: 100,
    })
    .await
    .unwrap();
    assert!(
        d.job_group_get(open).await.unwrap().is_none(),
        "dropped once its last member was counted"
    );
}

/// One test per store for a case.
macro_rules! every_store {
    ($name:ident, $body:ident) => {
        mod $name {
            use super::*;
            #[tokio::test]
            async fn memory() {
                $body(Arc::new(MemoryDriver::new())).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                $body(support::sqlite::driver(stringify!($name)).await).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                $body(support::pg::driver(stringify!($name)).await).await;
            }
            #[tokio::test]
            async fn redis() {
                $body(support::redis::driver(stringify!($name)).await).await;
            }
            #[tokio::test]
            async fn redis_cluster() {
                $body(support::redis::cluster_driver(stringify!($name)).await).await;
            }
        }
    };
}

every_store!(groups_scale, scale);
every_store!(groups_scale_cancel, scale_cancel);
every_store!(groups_every_path, every_path);
every_store!(groups_cascade, cascade);
every_store!(groups_purge, purge);

/// After everything finished and was purged, no group key is left.
#[tokio::test]
async fn redis_keeps_no_group_key_after_the_purge() {
    let server = support::redis::shared_server();
    let prefix = support::redis::prefix("groups_left");
    let d = RedisDriver::connect(&format!("{}/?prefix={prefix}", server.url()))
        .await
        .unwrap();
    let d: &dyn JobDriver = &d;
    let parent = enq(d, "qp", "parent", t0()).await;
    let p = claim(d, "qp", 1, t0()).await.remove(0);
    park(d, &p, at(100_000), t0()).await;
    let cb = enq(d, "qc", "callback", t0()).await;
    let c = claim(d, "qc", 1, t0()).await.remove(0);
    park(d, &c, at(100_000), t0()).await;
    let a = enq(d, "qp", "a", t0()).await;
    let b = enq(d, "qc", "b", t0()).await;
    let g = Uuid::now_v7();
    join(d, g, parent, Some(parent), &[a, b], GroupNeed::All, t0()).await;
    let batch = Uuid::now_v7();
    join(d, batch, cb, None, &[a], GroupNeed::All, t0()).await;
    for q in ["qp", "qc"] {
        let j = claim(d, q, 1, at(1)).await.remove(0);
        d.job_ack(&AckParams {
            job_id: j.id,
            by: j.by,
            result: None,
            now: at(1),
        })
        .await
        .unwrap();
    }
    assert!(group(d, g).await.is_done());
    assert!(group(d, batch).await.is_done());
    for q in ["qp", "qc"] {
        let j = claim(d, q, 1, at(2)).await.remove(0);
        d.job_ack(&AckParams {
            job_id: j.id,
            by: j.by,
            result: None,
            now: at(2),
        })
        .await
        .unwrap();
    }
    d.job_purge(&JobPurgeParams {
        done_before: at(10),
        finished_before: at(10),
        limit: 100,
    })
    .await
    .unwrap();
    let left = server.cli(&["--scan", "--pattern", &format!("*{prefix}*")]);
    let groups_left: Vec<&str> = left.lines().filter(|k| k.contains(":g:")).collect();
    assert!(groups_left.is_empty(), "{groups_left:?}");
    assert!(d.job_group_get(g).await.unwrap().is_none());
    assert!(d.job_group_get(batch).await.unwrap().is_none());
}

/// A dependency cancel and a bulk remove count members too, in a group of another queue.
async fn dependency_and_bulk(d: Arc<dyn JobDriver>) {
    let d = &*d;
    let ops = d.introspect().unwrap();
    let waiter = enq(d, "qp", "waiter", t0()).await;
    let w = claim(d, "qp", 1, t0()).await.remove(0);
    park(d, &w, at(100_000), t0()).await;
    let x = enq(d, "qx", "x", t0()).await;
    let mut dep = req("qc", "dependent", t0());
    dep.dependencies = Some(Dependencies {
        on: vec![x],
        on_failure: DependencyFailure::Cancel,
    });
    let dependent = d.job_enqueue(&dep).await.unwrap().id;
    let removed = enq(d, "qc", "bulk-removed", at(50)).await;
    let g = Uuid::now_v7();
    join(
        d,
        g,
        waiter,
        Some(waiter),
        &[dependent, removed],
        GroupNeed::All,
        t0(),
    )
    .await;
    assert_eq!(group(d, g).await.settled, 0);
    let jx = claim(d, "qx", 1, t0()).await.remove(0);
    d.job_nack(&NackParams {
        job_id: x,
        by: jx.by,
        target: NackTarget::DeadLetter,
        run_at: t0(),
        counts_as_attempt: true,
        error: Some("x".into()),
        error_code: None,
        now: at(1),
    })
    .await
    .unwrap();
    assert_eq!(state(d, dependent).await, Some(JobState::Cancelled));
    assert_eq!(group(d, g).await.settled, 1);
    let bulk = ops
        .job_remove_many(&jobs::driver::introspect::JobBulkParams {
            state: JobState::Delayed,
            queue: Some("qc".into()),
            name: None,
            tenant_id: None,
            actor: None,
            now: at(2),
        })
        .await
        .unwrap();
    let _ = bulk;
    assert_eq!(state(d, removed).await, None);
    let done = group(d, g).await;
    assert_eq!((done.settled, done.done_at), (2, Some(at(2))));
    assert_eq!(state(d, waiter).await, Some(JobState::Ready));
}

every_store!(groups_dependency_and_bulk, dependency_and_bulk);

/// Now on the wall clock: the racing cases below run real tasks side by side.
fn wall() -> Ts {
    chrono::Utc::now()
}

/// The last child's settle races its parent's park and wake after it, a hundred times: the
/// parent always ends due (either the count sees it parked, or its wake sees the group done).
async fn wake_race(d: Arc<dyn JobDriver>) {
    for i in 0..100 {
        let (pq, cq) = (format!("race-p{i}"), format!("race-c{i}"));
        let parent = enq(&*d, &pq, &format!("parent-{i}"), wall()).await;
        let parent_claim = claim(&*d, &pq, 1, wall()).await.remove(0);
        let child = enq(&*d, &cq, &format!("child-{i}"), wall()).await;
        let g = Uuid::now_v7();
        join(
            &*d,
            g,
            parent,
            Some(parent),
            &[child],
            GroupNeed::All,
            wall(),
        )
        .await;
        let child_claim = claim(&*d, &cq, 1, wall()).await.remove(0);
        let settler = d.clone();
        let settle = tokio::spawn(async move {
            let ack = AckParams {
                job_id: child,
                by: child_claim.by,
                result: None,
                now: wall(),
            };
            settler.job_ack_many(&[ack]).await.unwrap()
        });
        let parker = d.clone();
        let park_then_wake = tokio::spawn(async move {
            park(
                &*parker,
                &parent_claim,
                wall() + chrono::Duration::hours(1),
                wall(),
            )
            .await;
            let wake = GroupWakeParams {
                group: g,
                now: wall(),
            };
            parker.job_group_wake(&wake).await.unwrap()
        });
        settle.await.unwrap();
        park_then_wake.await.unwrap();
        assert_eq!(state(&*d, parent).await, Some(JobState::Ready), "round {i}");
    }
}

every_store!(groups_wake_race, wake_race);

/// 2,000 children settled by four claimers side by side, in batches acked in reverse order,
/// while the join runs: each counted once, the parent woken, no deadlock.
async fn settled_while_joining(d: Arc<dyn JobDriver>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let n = 2_000;
    let parent = enq(&*d, "side-p", "parent", wall()).await;
    let parent_claim = claim(&*d, "side-p", 1, wall()).await.remove(0);
    park(
        &*d,
        &parent_claim,
        wall() + chrono::Duration::hours(1),
        wall(),
    )
    .await;
    let mut children = Vec::with_capacity(n);
    for chunk in 0..n / 1000 {
        let reqs: Vec<_> = (chunk * 1000..(chunk + 1) * 1000)
            .map(|i| req("side-c", &format!("c{i}"), wall()))
            .collect();
        let enqueued = d.job_enqueue_many(&reqs).await.unwrap();
        children.extend(enqueued.into_iter().map(|r| r.id));
    }
    let acked = Arc::new(AtomicUsize::new(0));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut claimers = Vec::new();
    for _ in 0..4 {
        let (d, acked) = (d.clone(), acked.clone());
        claimers.push(tokio::spawn(async move {
            while acked.load(Ordering::SeqCst) < n && std::time::Instant::now() < deadline {
                let batch = claim(&*d, "side-c", 50, wall()).await;
                if batch.is_empty() {
                    tokio::task::yield_now().await;
                    continue;
                }
                let mut acks: Vec<_> = batch
                    .iter()
                    .map(|j| AckParams {
                        job_id: j.id,
                        by: j.by.clone(),
                        result: Some(serde_json::json!(1)),
                        now: wall(),
                    })
                    .collect();
                acks.reverse();
                let landed = d.job_ack_many(&acks).await.unwrap();
                acked.fetch_add(landed.iter().filter(|l| **l).count(), Ordering::SeqCst);
            }
        }));
    }
    let g = Uuid::now_v7();
    join(
        &*d,
        g,
        parent,
        Some(parent),
        &children,
        GroupNeed::All,
        wall(),
    )
    .await;
    for claimer in claimers {
        claimer.await.unwrap();
    }
    assert_eq!(
        acked.load(Ordering::SeqCst),
        n,
        "every child acked within a minute"
    );
    d.job_release_pending(wall()).await.unwrap();
    let done = group(&*d, g).await;
    assert_eq!((done.size, done.settled), (n as u32, n as u32));
    assert!(done.done_at.is_some());
    assert_eq!(state(&*d, parent).await, Some(JobState::Ready));
}

every_store!(groups_settled_while_joining, settled_while_joining);
