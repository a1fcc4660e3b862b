//! Dependencies between jobs ([`EnqueueRequest::dependencies`]): a dependent is stored blocked
//! (`suspended` until [`blocked_until`]) and never claimed while a job it depends on is live;
//! the settle of its last dependency makes it ready at once; a dependency ending `failed`,
//! `dead` or `cancelled` cancels it under [`DependencyFailure::Cancel`] (and its own
//! dependents with it) or lets it run under [`DependencyFailure::RunAnyway`]; what an enqueue names
//! is checked before anything is written; [`JobDriver::job_links`] shows the edges.

use std::sync::Arc;

use super::*;
use crate::driver::{JobCancelParams, JobGetParams};

/// A due request for `key` depending on `on` under `policy`.
fn dependent(key: &str, on: &[JobId], policy: DependencyFailure) -> EnqueueRequest {
    EnqueueRequest {
        dependencies: Some(Dependencies {
            on: on.to_vec(),
            on_failure: policy,
        }),
        ..request("conformance.dependent", key)
    }
}

/// Claims `id` (the one due job) and acks it at `now`.
async fn complete(d: &dyn JobDriver, id: JobId, now: Timestamp) {
    let job = claim_one(d, "w1", now).await;
    assert_eq!(job.id, id, "the case's job is the one due");
    assert!(ack(d, id, &job.by, now).await);
}

/// Claims `id` (the one due job) and dead-letters it at `now`.
async fn bury(d: &dyn JobDriver, id: JobId, now: Timestamp) {
    let job = claim_one(d, "w1", now).await;
    assert_eq!(job.id, id, "the case's job is the one due");
    let params = nack_params(id, &job.by, NackTarget::DeadLetter, now, now);
    assert!(nack(d, &params).await);
}

fn assert_blocked(row: &JobRecord) {
    assert!(
        is_blocked(row.state, row.run_at),
        "{} should be blocked: {} due {}",
        row.id,
        row.state,
        row.run_at
    );
}

/// A dependent waits for every job it names: blocked and never claimed while one is live,
/// ready (due at the settle) once the last one is done; the links read both ways.
pub async fn job_dependencies_wait_for_every_dependency(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let a = enqueue(d, &request("conformance.job", "dep-a")).await.id;
    let b = enqueue(d, &request("conformance.job", "dep-b")).await.id;
    let c = enqueue(d, &dependent("dep-c", &[a, b], DependencyFailure::Cancel)).await;
    assert!(!c.deduped);
    assert_blocked(&get(d, c.id).await);

    complete(d, a, at(1)).await;
    assert_blocked(&get(d, c.id).await);
    let links = d
        .job_links(c.id)
        .await
        .unwrap_or_else(|e| panic!("job_links failed: {e}"));
    let mut depends_on = links.depends_on.clone();
    depends_on.sort_by_key(|(id, _)| *id);
    let mut expected = vec![(a, Some(JobState::Done)), (b, Some(JobState::Ready))];
    expected.sort_by_key(|(id, _)| *id);
    assert_eq!(depends_on, expected);
    assert_eq!(links.on_dependency_failure, Some(DependencyFailure::Cancel));
    let of_a = d.job_links(a).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(of_a.dependents, vec![c.id]);
    assert_eq!(of_a.on_dependency_failure, None);

    complete(d, b, at(2)).await;
    let row = get(d, c.id).await;
    assert_eq!(row.state, JobState::Ready);
    assert!(row.run_at <= at(2), "due at once: {}", row.run_at);
    complete(d, c.id, at(3)).await;
}

/// A dependency ending dead cancels its dependents under the default policy, with
/// `X_JOB_DEPENDENCY_FAILED` naming it, and theirs in turn; a dependent declared
/// [`DependencyFailure::RunAnyway`] runs anyway once every dependency has ended.
pub async fn job_dependencies_failure_cancels_or_runs_by_policy(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let a = enqueue(d, &request("conformance.job", "fail-a")).await.id;
    let b = enqueue(d, &dependent("fail-b", &[a], DependencyFailure::Cancel))
        .await
        .id;
    let c = enqueue(d, &dependent("fail-c", &[b], DependencyFailure::Cancel))
        .await
        .id;
    let anyway = enqueue(
        d,
        &dependent("fail-run", &[a], DependencyFailure::RunAnyway),
    )
    .await
    .id;
    // Depends on the cancelled `b` but runs anyway.
    let after_b = enqueue(
        d,
        &dependent("fail-after-b", &[b], DependencyFailure::RunAnyway),
    )
    .await
    .id;
    bury(d, a, at(1)).await;

    let b_row = get(d, b).await;
    assert_eq!(b_row.state, JobState::Cancelled);
    assert_eq!(
        b_row.last_error_code.as_deref(),
        Some(ErrorCode::JobDependencyFailed.as_str())
    );
    assert!(
        b_row
            .last_error
            .as_deref()
            .unwrap_or("")
            .contains(&a.to_string()),
        "the error names the dependency: {:?}",
        b_row.last_error
    );
    let c_row = get(d, c).await;
    assert_eq!(
        c_row.state,
        JobState::Cancelled,
        "the cancel carries on down"
    );
    assert!(c_row
        .last_error
        .as_deref()
        .unwrap_or("")
        .contains(&b.to_string()));
    assert_eq!(get(d, anyway).await.state, JobState::Ready);
    assert_eq!(get(d, after_b).await.state, JobState::Ready);
}

/// An operator's cancel of a dependency settles its dependents as any ending does.
pub async fn job_dependencies_follow_a_cancelled_dependency(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let a = enqueue(d, &request("conformance.job", "cancel-a")).await.id;
    let b = enqueue(d, &dependent("cancel-b", &[a], DependencyFailure::Cancel))
        .await
        .id;
    let c = enqueue(
        d,
        &dependent("cancel-c", &[a], DependencyFailure::RunAnyway),
    )
    .await
    .id;
    d.job_cancel(&JobCancelParams {
        reason: None,
        id: a,
        now: at(1),
        actor: None,
    })
    .await
    .unwrap_or_else(|e| panic!("cancel failed: {e}"));
    assert_eq!(get(d, b).await.state, JobState::Cancelled);
    assert_eq!(get(d, c).await.state, JobState::Ready);
    complete(d, c, at(1)).await;
    // A blocked dependent is live: cancelling it directly works and holds no key after.
    let e = enqueue(d, &request("conformance.job", "cancel-e")).await.id;
    let f = enqueue(d, &dependent("cancel-f", &[e], DependencyFailure::Cancel))
        .await
        .id;
    d.job_cancel(&JobCancelParams {
        reason: None,
        id: f,
        now: at(2),
        actor: None,
    })
    .await
    .unwrap_or_else(|e| panic!("cancel failed: {e}"));
    assert_eq!(get(d, f).await.state, JobState::Cancelled);
    complete(d, e, at(3)).await;
    assert_eq!(get(d, f).await.state, JobState::Cancelled);
}

/// What an enqueue names is checked before anything is written: an unknown job, one of
/// another tenant, the job itself, a run time and a batch are refused; a dependency already
/// done blocks nothing; one already dead cancels the new job at once under the default policy
/// and blocks nothing under [`DependencyFailure::RunAnyway`]; a key already held answers its holder.
pub async fn job_dependencies_are_checked_at_enqueue(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let refused = |request: EnqueueRequest, code: ErrorCode| async move {
        let error = d
            .job_enqueue(&request)
            .await
            .expect_err("the enqueue should be refused");
        assert_eq!(error.code(), Some(code), "{error}");
        let row = d
            .job_get(&JobGetParams { id: request.id })
            .await
            .unwrap_or_else(|e| panic!("job_get failed: {e}"));
        assert!(row.is_none(), "a refused enqueue writes nothing");
    };
    let unknown = Uuid::now_v7();
    refused(
        dependent("chk-unknown", &[unknown], DependencyFailure::Cancel),
        ErrorCode::JobNotFound,
    )
    .await;
    let mut tenanted = request("conformance.job", "chk-tenant");
    tenanted.tenant_id = Some("acme".into());
    let tenanted = enqueue(d, &tenanted).await.id;
    refused(
        dependent("chk-other-tenant", &[tenanted], DependencyFailure::Cancel),
        ErrorCode::JobNotFound,
    )
    .await;
    d.job_cancel(&JobCancelParams {
        reason: None,
        id: tenanted,
        now: t0(),
        actor: None,
    })
    .await
    .unwrap_or_else(|e| panic!("cancel failed: {e}"));
    let mut own = dependent("chk-self", &[], DependencyFailure::Cancel);
    own.dependencies = Some(Dependencies {
        on: vec![own.id],
        on_failure: DependencyFailure::Cancel,
    });
    refused(own, ErrorCode::Invariant).await;
    let plain = enqueue(d, &request("conformance.job", "chk-plain"))
        .await
        .id;
    let mut later = dependent("chk-later", &[plain], DependencyFailure::Cancel);
    later.run_at = at(60);
    refused(later, ErrorCode::Invariant).await;
    let batch = [dependent("chk-batch", &[plain], DependencyFailure::Cancel)];
    let error = d
        .job_enqueue_many(&batch)
        .await
        .expect_err("a batch with dependencies is refused");
    assert_eq!(error.code(), Some(ErrorCode::Invariant));
    assert!(d
        .job_get(&JobGetParams { id: batch[0].id })
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .is_none());

    // Dependencies already ended.
    complete(d, plain, at(1)).await;
    let after_done = enqueue(
        d,
        &dependent("chk-done", &[plain], DependencyFailure::Cancel),
    )
    .await;
    assert_eq!(get(d, after_done.id).await.state, JobState::Ready);
    complete(d, after_done.id, at(2)).await;
    let doomed = enqueue(d, &request("conformance.job", "chk-dead")).await.id;
    bury(d, doomed, at(3)).await;
    let cancelled = enqueue(
        d,
        &dependent("chk-dead-c", &[doomed], DependencyFailure::Cancel),
    )
    .await
    .id;
    let row = get(d, cancelled).await;
    assert_eq!(row.state, JobState::Cancelled);
    assert_eq!(
        row.last_error_code.as_deref(),
        Some(ErrorCode::JobDependencyFailed.as_str())
    );
    let runs = enqueue(
        d,
        &dependent("chk-dead-r", &[doomed], DependencyFailure::RunAnyway),
    )
    .await
    .id;
    assert_eq!(get(d, runs).await.state, JobState::Ready);

    // A held key answers its holder and names no dependency for it.
    let waiting = enqueue(d, &request("conformance.job", "chk-waiting"))
        .await
        .id;
    let again = enqueue(
        d,
        &dependent("chk-dead-r", &[waiting], DependencyFailure::RunAnyway),
    )
    .await;
    assert!(again.deduped);
    assert_eq!(again.id, runs);
    let links = d.job_links(waiting).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(links.dependents.is_empty());
}

/// A dependency in another queue (another slot of a Redis Cluster) holds its dependent the
/// same way: blocked while it is live, released by its ack.
pub async fn job_dependencies_span_queues(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    const OTHER: &str = "conformance.dependencies.other";
    let mut elsewhere = request("conformance.job", "span-a");
    elsewhere.queue = OTHER.to_string();
    let a = enqueue(d, &elsewhere).await.id;
    let b = enqueue(d, &dependent("span-b", &[a], DependencyFailure::Cancel))
        .await
        .id;
    assert_blocked(&get(d, b).await);
    let mut params = claim_params("w1", 1, at(1));
    params.demand[0].queue = OTHER.to_string();
    let claimed = claim(d, &params).await;
    assert_eq!(claimed.jobs.len(), 1);
    assert!(ack(d, a, &claimed.jobs[0].by, at(1)).await);
    assert_eq!(get(d, b).await.state, JobState::Ready);
    let links = d.job_links(a).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(links.dependents, vec![b]);
}
