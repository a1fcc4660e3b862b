//! Tenancy and the actor: an enqueue made in one tenant's context for an input of another is
//! refused before anything is written, unless it says it crosses tenants; the actor an enqueue
//! names is stored on the row and read back by `job_get` and the claim, on every path in; an
//! actor out of bounds is refused the same way on every driver.
//!
//! The refusals are the client's (one place, ahead of every driver), so the refusal cases go
//! through a [`Jobs`] client; the round trips also go through the port.

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::worker::descriptor;
use super::*;
use crate::client::Jobs;
use crate::clock::TestClock;
use crate::descriptor::JobDescriptor;
use crate::enqueue::EnqueueOptions;
use crate::job::Job;
use crate::limits::MAX_ACTOR_BYTES;
use crate::run::Run;

/// An org's account: the job's tenant is `org`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Account {
    /// The tenant the input derives.
    pub org: String,
    /// The idempotency key, within the org.
    pub n: u32,
}

fn account(org: &str, n: u32) -> Account {
    Account {
        org: org.to_string(),
        n,
    }
}

/// Keyed by `n`, filed under `org`; does nothing.
#[derive(Debug)]
pub struct Tenanted;

impl Job for Tenanted {
    type Input = Account;
    type Output = ();
    const DESCRIPTOR: JobDescriptor = descriptor("conformance.tenanted");

    fn idempotency_key(input: &Account) -> String {
        format!("account:{}", input.n)
    }

    fn tenant(input: &Account) -> Option<String> {
        Some(input.org.clone())
    }

    fn run(_run: Run, _input: Account) -> BoxFuture<'static, Result<(), JobError>> {
        Box::pin(async { Ok(()) })
    }
}

fn client(driver: Arc<dyn JobDriver>) -> Jobs {
    Jobs::with_clock(driver, Arc::new(TestClock::at(t0())))
}

async fn rows_total(d: &dyn JobDriver) -> u64 {
    d.queue_stats(&QueueStatsParams { now: t0() })
        .await
        .unwrap_or_else(|e| panic!("queue_stats failed: {e}"))
        .iter()
        .map(|s| {
            s.ready + s.delayed + s.running + s.suspended + s.done + s.failed + s.dead + s.cancelled
        })
        .sum()
}

fn assert_refused(what: &str, result: Result<EnqueueResult, JobError>, code: ErrorCode) {
    match result {
        Ok(queued) => panic!(
            "{what}: expected {}, the job was stored as {}",
            code.as_str(),
            queued.id
        ),
        Err(error) => {
            assert_eq!(error.code(), Some(code), "{what}: {error}");
            assert_eq!(error.class(), crate::ErrorClass::Terminal, "{what}");
        }
    }
}

/// The actor an enqueue names is stored and read back whole by `job_get` and the claim: from
/// `job_enqueue`, `job_enqueue_many` and the client (its option, and a client acting for
/// someone); a request naming none stores none.
pub async fn tenancy_actor_round_trips_on_every_path_in(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let one = EnqueueRequest {
        actor: Some("user:42".into()),
        ..request("conformance.actor", "one")
    };
    enqueue(d, &one).await;
    let unnamed = request("conformance.actor", "unnamed");
    enqueue(d, &unnamed).await;
    let batch: Vec<EnqueueRequest> = ["a", "b"]
        .iter()
        .map(|k| EnqueueRequest {
            actor: Some(format!("service:{k} é")),
            ..request("conformance.actor", &format!("batch-{k}"))
        })
        .collect();
    d.job_enqueue_many(&batch)
        .await
        .unwrap_or_else(|e| panic!("enqueue_many failed: {e}"));
    assert_eq!(get(d, one.id).await.actor.as_deref(), Some("user:42"));
    assert_eq!(get(d, unnamed.id).await.actor, None);
    for (request, k) in batch.iter().zip(["a", "b"]) {
        let expected = format!("service:{k} é");
        assert_eq!(
            get(d, request.id).await.actor.as_deref(),
            Some(expected.as_str())
        );
    }

    let jobs = client(driver.clone());
    let longest = "a".repeat(MAX_ACTOR_BYTES);
    let by_option = jobs
        .enqueue_with::<Tenanted>(
            account("acme", 1),
            EnqueueOptions::new().actor(longest.clone()),
        )
        .await
        .unwrap_or_else(|e| panic!("an actor at its limit is stored: {e}"));
    assert_eq!(
        get(d, by_option.id).await.actor.as_deref(),
        Some(longest.as_str())
    );
    let acting = jobs.for_tenant("acme").acting_as("ops@acme");
    let by_client = acting
        .enqueue::<Tenanted>(account("acme", 2))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let row = get(d, by_client.id).await;
    assert_eq!(row.actor.as_deref(), Some("ops@acme"));
    assert_eq!(row.tenant_id.as_deref(), Some("acme"));
    // The call's own actor comes before the client's.
    let overridden = acting
        .enqueue_with::<Tenanted>(account("acme", 3), EnqueueOptions::new().actor("user:7"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(get(d, overridden.id).await.actor.as_deref(), Some("user:7"));

    // The claim hands the actor to the worker (its run span records it).
    let mut claimed = claim(d, &claim_params("w1", 10, t0())).await.jobs;
    claimed.sort_by_key(|j| j.id);
    let actors: Vec<Option<&str>> = claimed.iter().map(|j| j.actor.as_deref()).collect();
    assert_eq!(claimed.len(), 7, "every job is due at t0");
    let of = |id| {
        claimed
            .iter()
            .find(|j| j.id == id)
            .map(|j| j.actor.as_deref())
    };
    assert_eq!(of(one.id), Some(Some("user:42")), "{actors:?}");
    assert_eq!(of(unnamed.id), Some(None));
    assert_eq!(of(by_client.id), Some(Some("ops@acme")));
}

/// An enqueue in one tenant's context (the call's tenant, or a client scoped to one) for an
/// input that derives another is `X_JOB_TENANT_MISMATCH`, terminal, before any write; so is a
/// call on a scoped client naming another tenant. Saying `cross_tenant` files it as asked.
pub async fn tenancy_refuses_a_cross_tenant_enqueue_unless_it_says_so(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let jobs = client(driver.clone());
    let acme = jobs.for_tenant("acme");
    let mismatch = ErrorCode::JobTenantMismatch;
    let named = EnqueueOptions::new().tenant(Some("acme".into()));
    assert_refused(
        "the call's tenant",
        jobs.enqueue_with::<Tenanted>(account("globex", 1), named.clone())
            .await,
        mismatch,
    );
    assert_refused(
        "the client's tenant",
        acme.enqueue::<Tenanted>(account("globex", 1)).await,
        mismatch,
    );
    assert_refused(
        "another tenant named on a scoped client",
        acme.enqueue_with::<Tenanted>(
            account("globex", 1),
            EnqueueOptions::new().tenant(Some("globex".into())),
        )
        .await,
        mismatch,
    );
    assert_refused(
        "no tenant named on a scoped client",
        acme.enqueue_with::<Tenanted>(account("acme", 1), EnqueueOptions::new().tenant(None))
            .await,
        mismatch,
    );
    let many = acme
        .enqueue_many::<Tenanted, _>([account("acme", 1), account("globex", 2)])
        .await
        .unwrap_err();
    assert_eq!(
        many.code(),
        Some(mismatch),
        "one foreign input refuses the batch"
    );
    let message = acme
        .enqueue::<Tenanted>(account("globex-secret-org", 1))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        !message.contains("globex-secret-org") && !message.contains("\"acme\""),
        "the refusal names no tenant: {message}"
    );
    assert_eq!(rows_total(d).await, 0, "a refusal writes no row");

    // The same tenant, in either context: filed under it.
    let same = acme.enqueue::<Tenanted>(account("acme", 1)).await.unwrap();
    assert_eq!(get(d, same.id).await.tenant_id.as_deref(), Some("acme"));
    let same = jobs
        .enqueue_with::<Tenanted>(account("acme", 2), named)
        .await
        .unwrap();
    assert_eq!(get(d, same.id).await.tenant_id.as_deref(), Some("acme"));
    // Said on purpose: filed under the context's tenant, the input's run tenant untouched.
    let crossed = acme
        .enqueue_with::<Tenanted>(account("globex", 3), EnqueueOptions::new().cross_tenant())
        .await
        .unwrap();
    let row = get(d, crossed.id).await;
    assert_eq!(row.tenant_id.as_deref(), Some("acme"));
    assert_eq!(row.input["org"], "globex");
    let bucket = jobs
        .enqueue_with::<Tenanted>(
            account("globex", 4),
            EnqueueOptions::new()
                .tenant(Some("billing".into()))
                .cross_tenant(),
        )
        .await
        .unwrap();
    assert_eq!(
        get(d, bucket.id).await.tenant_id.as_deref(),
        Some("billing")
    );
    // No context: the derived tenant, as always.
    let plain = jobs
        .enqueue::<Tenanted>(account("globex", 5))
        .await
        .unwrap();
    assert_eq!(get(d, plain.id).await.tenant_id.as_deref(), Some("globex"));
    assert_eq!(rows_total(d).await, 5);
}

/// An actor over [`MAX_ACTOR_BYTES`] is `X_LIMIT_EXCEEDED`; one holding NUL or any other
/// control character is `X_VALUE_UNSTORABLE`; neither is echoed, nothing is written.
pub async fn tenancy_refuses_an_actor_out_of_bounds_before_any_write(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let jobs = client(driver.clone());
    let long = "a".repeat(MAX_ACTOR_BYTES + 1);
    let refused = jobs
        .enqueue_with::<Tenanted>(account("acme", 1), EnqueueOptions::new().actor(long))
        .await;
    assert_refused("a long actor", refused, ErrorCode::LimitExceeded);
    let two_byte = "é".repeat(MAX_ACTOR_BYTES / 2 + 1);
    let refused = jobs
        .enqueue_with::<Tenanted>(account("acme", 1), EnqueueOptions::new().actor(two_byte))
        .await;
    assert_refused("bytes, not characters", refused, ErrorCode::LimitExceeded);
    for bad in [
        "secret\0actor",
        "secret\nactor",
        "secret\u{1b}[2Jactor",
        "secret\ractor",
    ] {
        let result = jobs
            .acting_as(bad)
            .enqueue::<Tenanted>(account("acme", 1))
            .await;
        let message = result
            .as_ref()
            .err()
            .map(ToString::to_string)
            .unwrap_or_default();
        assert!(
            !message.contains("secret"),
            "the actor is not echoed: {message}"
        );
        assert_refused("a control character", result, ErrorCode::ValueUnstorable);
    }
    assert_eq!(rows_total(d).await, 0, "a refusal writes no row");
}
