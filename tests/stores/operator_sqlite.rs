//! The operator API on the SQLite driver, scoped to one tenant: a tenant-filtered listing
//! answers only that tenant's rows on every page, whatever cursor it is handed, and a
//! tenant-filtered bulk verb moves only that tenant's rows, never another's (the SQLite twin of
//! tests/engine/operator_tenancy.rs, which runs on memory and Postgres).

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use jobs::driver::introspect::{BulkResult, JobBulkParams, JobIntrospection, JobListParams};
use jobs::driver::{JobDriver, JobId, JobState};
use jobs::prelude::*;

use support::sqlite::TempDir;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Account {
    org: String,
    n: u32,
}

#[job(key = "sync:{org}:{n}", tenant = org)]
async fn sync_account(_run: Run, _input: Account) -> Result<(), JobError> {
    Ok(())
}

const ORGS: [&str; 2] = ["acme", "globex"];
const PER_ORG: u32 = 7;

/// A client on a fresh SQLite file, on a test clock (every row created at the same instant,
/// so pages are told apart by id alone), with seven delayed rows per tenant.
async fn seeded(dir: &TempDir) -> Jobs {
    let driver: Arc<dyn JobDriver> = Arc::new(support::sqlite::driver_in(dir).await);
    let jobs = Jobs::with_clock(driver, Arc::new(jobs::clock::TestClock::new()));
    for n in 0..PER_ORG {
        for org in ORGS {
            SyncAccount::enqueue_with(
                &jobs,
                Account { org: org.into(), n },
                EnqueueOptions::new().delay(Duration::from_secs(3600)),
            )
            .await
            .unwrap();
        }
    }
    jobs
}

fn page(tenant: Option<&str>, after: Option<String>, before: Option<String>) -> JobListParams {
    JobListParams {
        tenant_id: tenant.map(str::to_string),
        limit: Some(3),
        after,
        before,
        ..JobListParams::default()
    }
}

/// The rows of `tenant` in `state`, read in one page.
async fn rows_in(jobs: &Jobs, tenant: &str, state: JobState) -> Vec<JobId> {
    let listed = jobs
        .operator()
        .list_jobs(&JobListParams {
            tenant_id: Some(tenant.into()),
            state: Some(state),
            ..JobListParams::default()
        })
        .await
        .unwrap();
    assert!(listed
        .jobs
        .iter()
        .all(|j| j.tenant_id.as_deref() == Some(tenant)));
    listed.jobs.iter().map(|j| j.id).collect()
}

fn bulk(jobs: &Jobs, state: JobState, tenant: &str) -> JobBulkParams {
    JobBulkParams {
        state,
        queue: None,
        name: None,
        tenant_id: Some(tenant.into()),
        now: jobs.now(),
        actor: None,
    }
}

fn port(jobs: &Jobs) -> &dyn JobIntrospection {
    jobs.driver()
        .introspect()
        .expect("sqlite has an operator surface")
}

#[tokio::test]
async fn a_tenant_filtered_list_pages_only_that_tenant_whatever_the_cursor() {
    let dir = TempDir::new("operator_list_tenant");
    let jobs = seeded(&dir).await;
    let operator = jobs.operator();
    // Page through acme's rows, older and then back newer: only acme, all seven.
    let mut seen = Vec::new();
    let mut after = None;
    let mut pages = Vec::new();
    loop {
        let listed = operator
            .list_jobs(&page(Some("acme"), after, None))
            .await
            .unwrap();
        assert!(listed
            .jobs
            .iter()
            .all(|j| j.tenant_id.as_deref() == Some("acme")));
        seen.extend(listed.jobs.iter().map(|j| j.id));
        after = listed.after.clone();
        pages.push(listed);
        if after.is_none() {
            break;
        }
    }
    assert_eq!(seen.len(), PER_ORG as usize);
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), seen.len(), "no row on two pages");
    let back = operator
        .list_jobs(&page(Some("acme"), None, pages[1].before.clone()))
        .await
        .unwrap();
    assert_eq!(
        back.jobs, pages[0].jobs,
        "`before` walks back to the first page"
    );

    // A cursor from another tenant's (or an unfiltered) page: refused, or still only acme.
    let globex = operator
        .list_jobs(&page(Some("globex"), None, None))
        .await
        .unwrap();
    let unfiltered = operator.list_jobs(&page(None, None, None)).await.unwrap();
    for cursor in [globex.after, unfiltered.after].into_iter().flatten() {
        for (after, before) in [(Some(cursor.clone()), None), (None, Some(cursor.clone()))] {
            match operator.list_jobs(&page(Some("acme"), after, before)).await {
                Ok(listed) => assert!(listed
                    .jobs
                    .iter()
                    .all(|j| j.tenant_id.as_deref() == Some("acme"))),
                Err(error) => assert_eq!(error.code(), Some(ErrorCode::JobPageInvalid)),
            }
        }
    }
    // A forged cursor is refused, never widened; a tenant that is SQL text matches nothing.
    let forged = operator
        .list_jobs(&page(Some("acme"), Some("' or 1=1 --".into()), None))
        .await
        .unwrap_err();
    assert_eq!(forged.code(), Some(ErrorCode::JobPageInvalid));
    let injected = operator
        .list_jobs(&page(Some("acme' or '1'='1"), None, None))
        .await
        .unwrap();
    assert!(injected.jobs.is_empty());
}

#[tokio::test]
async fn a_tenant_filtered_bulk_verb_moves_only_that_tenants_rows() {
    let dir = TempDir::new("operator_bulk_tenant");
    let jobs = seeded(&dir).await;
    let p = port(&jobs);
    let all = PER_ORG as usize;

    // Promote: acme's delayed rows come due; globex's still wait.
    let moved = p
        .job_promote_many(&bulk(&jobs, JobState::Delayed, "acme"))
        .await
        .unwrap();
    assert_eq!(
        moved,
        BulkResult {
            affected: 7,
            remaining: 0
        }
    );
    assert_eq!(rows_in(&jobs, "acme", JobState::Ready).await.len(), all);
    assert_eq!(rows_in(&jobs, "globex", JobState::Delayed).await.len(), all);

    // Requeue: every row cancelled; only acme's come back.
    for org in ORGS {
        for state in [JobState::Ready, JobState::Delayed] {
            for id in rows_in(&jobs, org, state).await {
                jobs.cancel(id).await.unwrap();
            }
        }
    }
    let moved = p
        .job_requeue_many(&bulk(&jobs, JobState::Cancelled, "acme"))
        .await
        .unwrap();
    assert_eq!(
        moved,
        BulkResult {
            affected: 7,
            remaining: 0
        }
    );
    assert_eq!(rows_in(&jobs, "acme", JobState::Ready).await.len(), all);
    assert_eq!(
        rows_in(&jobs, "globex", JobState::Cancelled).await.len(),
        all
    );

    // Remove: acme's rows go, globex's stay, and a tenant that is SQL text removes nothing.
    let removed = p
        .job_remove_many(&bulk(&jobs, JobState::Cancelled, "acme' or '1'='1"))
        .await
        .unwrap();
    assert_eq!(removed, BulkResult::default());
    let removed = p
        .job_remove_many(&bulk(&jobs, JobState::Ready, "acme"))
        .await
        .unwrap();
    assert_eq!(
        removed,
        BulkResult {
            affected: 7,
            remaining: 0
        }
    );
    let left = jobs
        .operator()
        .list_jobs(&JobListParams::default())
        .await
        .unwrap();
    assert_eq!(left.jobs.len(), all);
    assert!(left
        .jobs
        .iter()
        .all(|j| j.tenant_id.as_deref() == Some("globex") && j.state == JobState::Cancelled));
}
