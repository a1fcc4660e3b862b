//! The operator API's tenant filter cannot be bypassed: a tenant-filtered listing answers only
//! that tenant's rows on every page, whatever cursor it is handed, on both drivers.

mod support;

use std::sync::Arc;

use jobs::driver::introspect::JobListParams;
use jobs::driver::{JobDriver, MemoryDriver, PostgresDriver};
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
