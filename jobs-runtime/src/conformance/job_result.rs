//! Kept results (`#[job(.., keep_result)]`): the ack writes a job's result with its settle and
//! under the same fence (`job_ack`, `job_ack_many`), `job_get` reads it back, a requeue clears
//! it, the purge takes it with the row; and a worker keeps a declared result, and refuses one
//! over [`MAX_RESULT_BYTES`], the same way on every driver.

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::worker::{descriptor, subject, tick, Perishable, Subject};
use super::*;
use crate::client::Jobs;
use crate::clock::TestClock;
use crate::descriptor::{JobDescriptor, KeptResult};
use crate::driver::introspect::{JobBulkParams, JobIntrospection, JobRequeueParams};
use crate::driver::JobPurgeParams;
use crate::job::Job;
use crate::limits::MAX_RESULT_BYTES;
use crate::registry::Registry;
use crate::run::Run;
use crate::worker::{ExecutionOutcome, Worker};

/// An ack of `job` under `by` at `now`, carrying `result`.
fn ack_with(job: JobId, by: &ClaimIdentity, result: Option<Value>, now: Timestamp) -> AckParams {
    AckParams {
        job_id: job,
        by: by.clone(),
        result,
        now,
    }
}

async fn ack_one(d: &dyn JobDriver, params: &AckParams) -> bool {
    d.job_ack(params)
        .await
        .unwrap_or_else(|e| panic!("ack failed: {e}"))
}

/// A result with what stores tend to get wrong: nesting, escapes, non-ASCII text, a fraction.
fn tricky_result() -> Value {
    json!({
        "total": 3,
        "ids": ["a-1", "quote \" and backslash \\", "é ✓"],
        "nested": { "ok": true, "ratio": 1.5, "none": null },
    })
}

/// An ack carrying a result keeps it with the row, whole; an ack carrying none keeps none; a
/// JSON `null` result (a body returning `()`) is kept as one, apart from none.
pub async fn job_ack_keeps_the_result_it_carries(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let kept = enqueue_key(d, "kept").await;
    let none = enqueue_key(d, "none").await;
    let null = enqueue_key(d, "null").await;
    let claimed = claim(d, &claim_params("w1", 3, t0())).await.jobs;
    assert_eq!(claimed.len(), 3);
    for job in &claimed {
        assert_eq!(get(d, job.id).await.result, None, "a running job has none");
        let result = match job.id {
            id if id == kept => Some(tricky_result()),
            id if id == null => Some(Value::Null),
            _ => None,
        };
        assert!(ack_one(d, &ack_with(job.id, &job.by, result, at(3))).await);
    }
    let row = get(d, kept).await;
    assert_eq!(row.state, JobState::Done);
    assert_eq!(row.result, Some(tricky_result()));
    assert_eq!(get(d, none).await.result, None);
    assert_eq!(get(d, null).await.result, Some(Value::Null));
}

/// The batched ack keeps each job's own result, and nothing for an ack whose claim does not
/// hold its row.
pub async fn job_ack_many_keeps_each_result_and_none_for_a_stale_claim(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let a = enqueue_key(d, "a").await;
    let b = enqueue_key(d, "b").await;
    let c = enqueue_key(d, "c").await;
    let claimed = claim(d, &claim_params("w1", 3, t0())).await.jobs;
    let by = |id: JobId| {
        claimed
            .iter()
            .find(|j| j.id == id)
            .map(|j| j.by.clone())
            .expect("claimed")
    };
    let not_the_claim = ClaimIdentity {
        worker_id: "w9".into(),
        claim: by(c).claim,
    };
    let landed = d
        .job_ack_many(&[
            ack_with(a, &by(a), Some(json!({ "n": 1 })), at(2)),
            ack_with(b, &by(b), None, at(2)),
            ack_with(c, &not_the_claim, Some(json!("not yours")), at(2)),
        ])
        .await
        .unwrap();
    assert_eq!(landed, vec![true, true, false]);
    assert_eq!(get(d, a).await.result, Some(json!({ "n": 1 })));
    assert_eq!(get(d, b).await.result, None);
    let row = get(d, c).await;
    assert_eq!((row.state, row.result), (JobState::Running, None));
    assert!(ack_one(d, &ack_with(c, &by(c), None, at(3))).await);
    assert_eq!(get(d, c).await.result, None, "its own ack kept none");
}

/// A late ack from a claim that lapsed (its row re-claimed by another worker) lands nowhere and
/// keeps no result, before or after the live claim's ack; the live claim's result stands.
pub async fn job_ack_under_a_lapsed_claim_keeps_no_result(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let id = enqueue_key(d, "k").await;
    let first = claim_one(d, "w1", t0()).await;
    let second = claim_one(d, "w2", at(30)).await;
    assert_eq!(second.id, id);

    let late = ack_with(id, &first.by, Some(json!("late")), at(31));
    assert!(!ack_one(d, &late).await, "the lapsed claim");
    let row = get(d, id).await;
    assert_eq!((row.state, row.result), (JobState::Running, None));

    let live = Some(json!({ "by": "w2" }));
    assert!(ack_one(d, &ack_with(id, &second.by, live.clone(), at(32))).await);
    let later = ack_with(id, &first.by, Some(json!("later")), at(33));
    assert!(!ack_one(d, &later).await, "the lapsed claim, once done");
    assert!(
        !d.job_ack_many(&[later]).await.unwrap()[0],
        "nor in a batch"
    );
    assert_eq!(get(d, id).await.result, live);
}

/// A requeue (of one job, or in bulk) clears the finished run's result: the next run keeps its
/// own, or none.
pub async fn job_requeue_clears_the_kept_result(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p: &dyn JobIntrospection = d.introspect().unwrap_or_else(|| {
        panic!(
            "the `{}` driver has no introspection: a requeue needs one",
            d.name()
        )
    });
    let one = enqueue_key(d, "one").await;
    let job = claim_one(d, "w1", t0()).await;
    assert!(ack_one(d, &ack_with(one, &job.by, Some(json!([1, 2])), at(1))).await);
    let row = p
        .job_requeue(&JobRequeueParams {
            id: one,
            from_step: None,
            actor: None,
            now: at(2),
        })
        .await
        .expect("requeued");
    assert_eq!((row.state, row.result), (JobState::Ready, None));
    assert_eq!(get(d, one).await.result, None);
    let again = claim_one(d, "w1", at(2)).await;
    assert!(ack_one(d, &ack_with(one, &again.by, None, at(3))).await);
    assert_eq!(get(d, one).await.result, None, "the next run kept none");

    let bulk = enqueue_key(d, "bulk").await;
    let job = claim_one(d, "w1", at(4)).await;
    assert!(ack_one(d, &ack_with(bulk, &job.by, Some(json!("r")), at(5))).await);
    let moved = p
        .job_requeue_many(&JobBulkParams {
            state: JobState::Done,
            queue: Some(QUEUE.to_string()),
            name: None,
            tenant_id: None,
            actor: None,
            now: at(6),
        })
        .await
        .unwrap();
    assert_eq!(moved.affected, 2);
    let row = get(d, bulk).await;
    assert_eq!((row.state, row.result), (JobState::Ready, None));
}

/// The result lives in the row: the purge of a done row takes it, and nothing of it is left
/// to read.
pub async fn job_purge_takes_the_result_with_the_row(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let id = enqueue_key(d, "k").await;
    let job = claim_one(d, "w1", t0()).await;
    assert!(ack_one(d, &ack_with(id, &job.by, Some(tricky_result()), t0())).await);
    let purge = JobPurgeParams {
        done_before: at(60),
        finished_before: at(60),
        limit: 10,
    };
    assert_eq!(d.job_purge(&purge).await.unwrap(), 1);
    assert_eq!(d.job_get(&JobGetParams { id }).await.unwrap(), None);
    // The key makes a fresh job, which has kept nothing.
    let fresh = enqueue_key(d, "k").await;
    assert_ne!(fresh, id);
    assert_eq!(get(d, fresh).await.result, None);
}

/// What [`Keeper`] keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Tally {
    /// The input's key.
    pub key: String,
    /// Its length.
    pub len: usize,
}

/// Keeps its result (`keep_result`). Under the key `huge` its result is over
/// [`MAX_RESULT_BYTES`] of JSON text.
#[derive(Debug)]
pub struct Keeper;

impl Job for Keeper {
    type Input = Subject;
    type Output = Tally;
    const DESCRIPTOR: JobDescriptor = {
        let mut d = descriptor("conformance.keeper");
        d.result = Some(KeptResult::of::<Tally>("Tally"));
        d
    };

    fn idempotency_key(input: &Subject) -> String {
        format!("keeper:{}", input.key)
    }

    fn tenant(_: &Subject) -> Option<String> {
        None
    }

    fn run(_run: Run, input: Subject) -> BoxFuture<'static, Result<Tally, JobError>> {
        Box::pin(async move {
            let key = if input.key == "huge" {
                "r".repeat(MAX_RESULT_BYTES)
            } else {
                input.key
            };
            Ok(Tally {
                len: key.len(),
                key,
            })
        })
    }
}

/// A worker over [`Keeper`] and [`Perishable`] (which keeps no result), on a frozen clock.
fn rig(driver: Arc<dyn JobDriver>) -> (Jobs, Worker) {
    let clock = TestClock::at(t0());
    let jobs = Jobs::with_clock(driver, Arc::new(clock));
    let mut registry = Registry::new();
    registry
        .register::<Keeper>()
        .and_then(|r| r.register::<Perishable>())
        .expect("distinct names");
    let worker = jobs
        .worker()
        .registry(registry)
        .queues([QUEUE])
        .build()
        .expect("the worker builds");
    (jobs, worker)
}

/// A job declared `keep_result` is acked with its output, read back typed or untyped; a job
/// that keeps none stores none; a result over [`MAX_RESULT_BYTES`] fails its job for good on
/// the attempt it was returned (`X_LIMIT_EXCEEDED`, dead-lettered), storing nothing, and its
/// error names the size, never the value.
pub async fn worker_keeps_a_declared_result_and_refuses_one_over_the_limit(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let (jobs, worker) = rig(driver.clone());
    let kept = jobs.enqueue::<Keeper>(subject("k1")).await.unwrap();
    let huge = jobs.enqueue::<Keeper>(subject("huge")).await.unwrap();
    let plain = jobs.enqueue::<Perishable>(subject("p")).await.unwrap();
    // Passes until all three ran (the clock stands still: nothing is due later).
    let mut outcomes = Vec::new();
    for _ in 0..3 {
        outcomes.extend(tick(&worker).await);
    }
    let outcome = |id: JobId| {
        outcomes
            .iter()
            .find(|e| e.job_id == id)
            .map(|e| e.outcome)
            .unwrap_or_else(|| panic!("job {id} did not run"))
    };
    assert_eq!(outcome(kept.id), ExecutionOutcome::Completed);
    assert_eq!(outcome(plain.id), ExecutionOutcome::Completed);
    assert_eq!(outcome(huge.id), ExecutionOutcome::DeadLettered);

    let row = get(d, kept.id).await;
    assert_eq!(row.state, JobState::Done);
    assert_eq!(row.result, Some(json!({ "key": "k1", "len": 2 })));
    let typed = jobs.job_result::<Keeper>(kept.id).await.unwrap();
    assert_eq!(
        typed,
        Some(Tally {
            key: "k1".into(),
            len: 2
        })
    );
    assert_eq!(
        get(d, plain.id).await.result,
        None,
        "kept only when declared"
    );

    let row = get(d, huge.id).await;
    assert_eq!((row.state, row.attempt), (JobState::Dead, 1));
    assert_eq!(row.result, None, "nothing of it is stored");
    assert_eq!(
        row.last_error_code.as_deref(),
        Some(ErrorCode::LimitExceeded.as_str())
    );
    let error = row.last_error.unwrap_or_default();
    assert!(error.contains("MAX_RESULT_BYTES"), "{error}");
    assert!(
        !error.contains("rrrr"),
        "the value is never echoed: {error}"
    );
}
