//! The operator API's tenant filter cannot be bypassed: a tenant-filtered listing answers only
//! that tenant's rows on every page, whatever cursor it is handed; and on a client scoped to a
//! tenant (`Jobs::for_tenant`) every verb, one job's or the bulk ones, neither sees nor touches
//! another tenant's rows. On memory, Postgres and SQLite.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jobs::driver::introspect::{JobBulkParams, JobListParams};
use jobs::driver::{JobDriver, JobId, JobState, MemoryDriver, PostgresDriver};
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Account {
    org: String,
    n: u32,
}

#[job(key = "sync:{org}:{n}", tenant = org)]
async fn sync_account(_run: Run, _input: Account) -> Result<(), JobError> {
    Ok(())
}

async fn tenant_filter_holds(driver: Arc<dyn JobDriver>) {
    let jobs = Jobs::with_clock(driver, Arc::new(jobs::clock::TestClock::new()));
    for n in 0..7 {
        for org in ["acme", "globex"] {
            SyncAccount::enqueue(&jobs, Account { org: org.into(), n })
                .await
                .unwrap();
        }
    }
    let page =
        |tenant: Option<&str>, after: Option<String>, before: Option<String>| JobListParams {
            tenant_id: tenant.map(str::to_string),
            limit: Some(3),
            after,
            before,
            ..JobListParams::default()
        };
    // Page through acme's rows: only acme, all seven of them.
    let mut seen = 0;
    let mut after = None;
    loop {
        let listed = jobs
            .operator()
            .list_jobs(&page(Some("acme"), after, None))
            .await
            .unwrap();
        for job in &listed.jobs {
            assert_eq!(job.tenant_id.as_deref(), Some("acme"));
        }
        seen += listed.jobs.len();
        after = listed.after;
        if after.is_none() {
            break;
        }
    }
    assert_eq!(seen, 7);
    // A cursor from another tenant's (or an unfiltered) page: refused, or still only acme.
    let globex = jobs
        .operator()
        .list_jobs(&page(Some("globex"), None, None))
        .await
        .unwrap();
    let unfiltered = jobs
        .operator()
        .list_jobs(&page(None, None, None))
        .await
        .unwrap();
    for cursor in [globex.after, unfiltered.after].into_iter().flatten() {
        for (after, before) in [(Some(cursor.clone()), None), (None, Some(cursor.clone()))] {
            match jobs
                .operator()
                .list_jobs(&page(Some("acme"), after, before))
                .await
            {
                Ok(listed) => assert!(listed
                    .jobs
                    .iter()
                    .all(|j| j.tenant_id.as_deref() == Some("acme"))),
                Err(error) => assert_eq!(error.code(), Some(ErrorCode::JobPageInvalid)),
            }
        }
    }
    // A forged cursor is refused, never widened.
    let forged = jobs
        .operator()
        .list_jobs(&page(Some("acme"), Some("' or 1=1 --".into()), None))
        .await
        .unwrap_err();
    assert_eq!(forged.code(), Some(ErrorCode::JobPageInvalid));
}

#[tokio::test]
async fn on_memory() {
    tenant_filter_holds(Arc::new(MemoryDriver::new())).await;
}

#[tokio::test]
async fn on_postgres() {
    let (pool, schema) = support::pg::schema("operator_tenancy").await;
    tenant_filter_holds(Arc::new(PostgresDriver::new(pool, &schema).unwrap())).await;
}

#[tokio::test]
async fn on_sqlite() {
    tenant_filter_holds(support::sqlite::driver("operator_tenancy").await).await;
}

/// Every row of `tenant`, by id: its state, due time and last write.
async fn snapshot(
    jobs: &Jobs,
    tenant: &str,
) -> BTreeMap<JobId, (JobState, jobs::clock::Timestamp, jobs::clock::Timestamp)> {
    let listed = jobs
        .operator()
        .list_jobs(&JobListParams {
            tenant_id: Some(tenant.into()),
            limit: Some(200),
            ..JobListParams::default()
        })
        .await
        .unwrap();
    assert!(listed.after.is_none(), "one page holds them all");
    listed
        .jobs
        .iter()
        .map(|j| (j.id, (j.state, j.run_at, j.updated_at)))
        .collect()
}

/// One org's rows in each state a verb moves: ready, delayed (an hour out) and cancelled.
struct Rows {
    ready: Vec<JobId>,
    delayed: Vec<JobId>,
    cancelled: Vec<JobId>,
}

async fn seed(jobs: &Jobs, org: &str) -> Rows {
    let mut rows = Rows {
        ready: Vec::new(),
        delayed: Vec::new(),
        cancelled: Vec::new(),
    };
    for n in 0..3 {
        let input = |n| Account { org: org.into(), n };
        rows.ready
            .push(SyncAccount::enqueue(jobs, input(n)).await.unwrap().id);
        let later = EnqueueOptions::new().delay(Duration::from_secs(3600));
        rows.delayed.push(
            SyncAccount::enqueue_with(jobs, input(10 + n), later)
                .await
                .unwrap()
                .id,
        );
        let id = SyncAccount::enqueue(jobs, input(20 + n)).await.unwrap().id;
        jobs.cancel(id).await.unwrap();
        rows.cancelled.push(id);
    }
    rows
}

async fn verbs_stay_in_their_tenant(driver: Arc<dyn JobDriver>) {
    let jobs = Jobs::with_clock(driver, Arc::new(jobs::clock::TestClock::new()));
    let mine = seed(&jobs, "acme").await;
    let theirs = seed(&jobs, "globex").await;
    let before = snapshot(&jobs, "globex").await;
    let acme = jobs.for_tenant("acme");
    let op = acme.operator();
    let not_found = Some(ErrorCode::JobNotFound);

    // One job's verbs: another tenant's id answers as an unknown id does.
    let foreign = theirs.ready[0];
    assert_eq!(acme.job(foreign).await.unwrap(), None);
    assert!(acme.job(mine.ready[0]).await.unwrap().is_some());
    let unknown = uuid::Uuid::now_v7();
    for id in [foreign, unknown] {
        assert_eq!(op.inspect_job(id).await.unwrap_err().code(), not_found);
        let cancel = op.cancel(id).await.unwrap_err();
        assert_eq!(cancel.code(), Some(ErrorCode::JobNotCancellable));
        assert_eq!(cancel.message(), format!("no job with id {id}"));
        let cancel = acme.cancel(id).await.unwrap_err();
        assert_eq!(cancel.code(), Some(ErrorCode::JobNotCancellable));
    }
    let inspect = op.inspect_job(foreign).await.unwrap_err();
    assert_eq!(inspect.message(), format!("no job with id {foreign}"));
    for id in [theirs.ready[0], theirs.delayed[0], theirs.cancelled[0]] {
        assert_eq!(op.requeue(id, None).await.unwrap_err().code(), not_found);
        assert_eq!(op.remove(id).await.unwrap_err().code(), not_found);
        assert_eq!(op.promote(id).await.unwrap_err().code(), not_found);
    }
    assert_eq!(snapshot(&jobs, "globex").await, before, "globex untouched");

    // ... and the tenant's own ids work.
    let shown = op.inspect_job(mine.ready[0]).await.unwrap();
    assert_eq!(shown.job.tenant_id.as_deref(), Some("acme"));
    assert_eq!(
        op.cancel(mine.ready[0]).await.unwrap().state,
        JobState::Cancelled
    );
    let requeued = op.requeue(mine.cancelled[0], None).await.unwrap();
    assert_eq!(requeued.state, JobState::Ready);
    assert_eq!(
        op.promote(mine.delayed[0]).await.unwrap().state,
        JobState::Ready
    );
    op.remove(mine.ready[1]).await.unwrap();
    assert_eq!(jobs.job(mine.ready[1]).await.unwrap(), None);

    // A list or a bulk verb covers the client's tenant only; naming another is refused.
    let listed = op.list_jobs(&JobListParams::default()).await.unwrap();
    assert!(!listed.jobs.is_empty());
    assert!(listed
        .jobs
        .iter()
        .all(|j| j.tenant_id.as_deref() == Some("acme")));
    let elsewhere = JobListParams {
        tenant_id: Some("globex".into()),
        ..JobListParams::default()
    };
    let refused = op.list_jobs(&elsewhere).await.unwrap_err();
    assert_eq!(refused.code(), Some(ErrorCode::JobTenantMismatch));
    let bulk = |state, tenant: Option<&str>| JobBulkParams {
        state,
        queue: None,
        name: None,
        tenant_id: tenant.map(str::to_string),
        now: jobs.now(),
        actor: None,
    };
    for state in [JobState::Cancelled, JobState::Ready, JobState::Delayed] {
        let named = bulk(state, Some("globex"));
        for refused in [
            op.requeue_many(&named).await,
            op.remove_many(&named).await,
            op.promote_many(&named).await,
        ] {
            assert_eq!(
                refused.unwrap_err().code(),
                Some(ErrorCode::JobTenantMismatch)
            );
        }
    }
    let requeued = op
        .requeue_many(&bulk(JobState::Cancelled, None))
        .await
        .unwrap();
    // acme's cancelled rows: the two left of the seed, and the one cancelled above.
    assert_eq!(requeued.affected, 3);
    let promoted = op
        .promote_many(&bulk(JobState::Delayed, Some("acme")))
        .await
        .unwrap();
    assert_eq!(promoted.affected, 2);
    let removed = op.remove_many(&bulk(JobState::Ready, None)).await.unwrap();
    assert!(removed.affected >= 5, "{removed:?}");
    assert_eq!(snapshot(&jobs, "globex").await, before, "globex untouched");
    let left = snapshot(&jobs, "acme").await;
    assert!(
        left.is_empty(),
        "acme's rows all ended ready and were removed: {left:?}"
    );

    // Unscoped, a bulk verb given a tenant moves that tenant's rows only.
    let moved = jobs
        .operator()
        .promote_many(&bulk(JobState::Delayed, Some("globex")))
        .await
        .unwrap();
    assert_eq!(moved.affected, theirs.delayed.len() as u64);
}

#[tokio::test]
async fn every_verb_stays_in_its_tenant_on_memory() {
    verbs_stay_in_their_tenant(Arc::new(MemoryDriver::new())).await;
}

#[tokio::test]
async fn every_verb_stays_in_its_tenant_on_postgres() {
    let (pool, schema) = support::pg::schema("operator_tenancy_verbs").await;
    verbs_stay_in_their_tenant(Arc::new(PostgresDriver::new(pool, &schema).unwrap())).await;
}

#[tokio::test]
async fn every_verb_stays_in_its_tenant_on_sqlite() {
    verbs_stay_in_their_tenant(support::sqlite::driver("operator_tenancy_verbs").await).await;
}

/// `Operator::drain` on memory with the frozen clock: runs lapsed with attempts left go back to
/// ready, a live lease stays; a client scoped to a tenant is refused, since a queue's lapsed
/// runs span its tenants.
#[tokio::test]
async fn drain_deals_with_lapsed_runs_and_refuses_a_tenant_scoped_client() {
    use jobs::driver::{ClaimParams, QueueDemand};
    let clock = Arc::new(jobs::clock::TestClock::new());
    let jobs = Jobs::with_clock(Arc::new(MemoryDriver::new()), clock.clone());
    let claim = |worker: &str, lease: u64| ClaimParams {
        demand: vec![QueueDemand {
            queue: "default".into(),
            limit: 1,
        }],
        worker_id: worker.into(),
        visibility_timeout: Duration::from_secs(lease),
        drop_exhausted: Vec::new(),
        fair_after: String::new(),
        now: jobs.now(),
    };
    let first = SyncAccount::enqueue_with(
        &jobs,
        Account {
            org: "acme".into(),
            n: 100,
        },
        EnqueueOptions::new(),
    )
    .await
    .unwrap();
    let taken = jobs.driver().job_claim(&claim("w1", 30)).await.unwrap();
    assert_eq!(taken.jobs[0].id, first.id);
    let more = SyncAccount::enqueue(
        &jobs,
        Account {
            org: "acme".into(),
            n: 101,
        },
    )
    .await
    .unwrap();
    assert_eq!(
        jobs.driver()
            .job_claim(&claim("w1", 30))
            .await
            .unwrap()
            .jobs[0]
            .id,
        more.id
    );
    let live = SyncAccount::enqueue(
        &jobs,
        Account {
            org: "acme".into(),
            n: 102,
        },
    )
    .await
    .unwrap();
    clock.advance(Duration::from_secs(31));
    assert_eq!(
        jobs.driver()
            .job_claim(&claim("w2", 3600))
            .await
            .unwrap()
            .jobs[0]
            .id,
        live.id
    );
    // Both lapsed runs are on attempt 1 of 3 (the default): both go back, none is buried (the
    // burial of a final attempt is the conformance case `job_claim_with_no_slot_..`).
    let refused = jobs
        .for_tenant("acme")
        .operator()
        .drain("default")
        .await
        .unwrap_err();
    assert!(refused.is(ErrorCode::JobTenantMismatch), "{refused}");
    let report = jobs.operator().drain("default").await.unwrap();
    let mut requeued = report.requeued.clone();
    requeued.sort();
    let mut expected = vec![first.id, more.id];
    expected.sort();
    assert_eq!(requeued, expected);
    assert!(report.buried.is_empty());
    assert_eq!(report.running, 1);
    for id in [first.id, more.id] {
        let row = jobs.job(id).await.unwrap().unwrap();
        assert_eq!((row.state, row.attempt), (JobState::Ready, 1));
    }
    assert_eq!(
        jobs.job(live.id).await.unwrap().unwrap().state,
        JobState::Running
    );
}
