//! `job_enqueue` / `job_enqueue_many`: ids, the live-key namespace, id-level dedupe, the
//! conflict policy, and one row per key under concurrency.

use std::collections::HashSet;
use std::sync::Arc;

use uuid::Uuid;

use super::*;
use crate::driver::{JobCancelParams, JobGetParams};

/// A new job answers the ids it was given and is stored `ready`, attempt 0, with its input.
pub async fn job_enqueue_answers_the_ids_it_was_given(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let mut req = request("conformance.job", "k1");
    req.tenant_id = Some("acme".into());
    req.max_attempts = 5;
    let result = enqueue(d, &req).await;
    assert_eq!(
        result,
        EnqueueResult {
            id: req.id,
            run_id: req.run_id,
            deduped: false
        }
    );
    let row = get(d, req.id).await;
    assert_eq!(row.id, req.id);
    assert_eq!(row.run_id, req.run_id);
    assert_eq!(row.name, "conformance.job");
    assert_eq!(row.queue, QUEUE);
    assert_eq!(row.input, req.input);
    assert_eq!(row.idempotency_key, "k1");
    assert_eq!(row.tenant_id.as_deref(), Some("acme"));
    assert_eq!(row.state, JobState::Ready);
    assert_eq!(row.attempt, 0);
    assert_eq!(row.max_attempts, 5);
    assert_eq!(row.run_at, t0());
    assert_eq!(row.created_at, t0());
    assert_eq!(row.updated_at, t0());
    assert_eq!(row.claims, 0);
    assert_eq!(row.claimed_by, None);
    assert_eq!(row.visible_at, None);
    assert_eq!(row.last_error, None);
    assert_eq!(row.progress, None);
}

/// A job whose `run_at` is after `now` is stored `delayed`.
pub async fn job_enqueue_in_the_future_is_delayed(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let mut req = request("conformance.job", "later");
    req.run_at = at(60);
    enqueue(d, &req).await;
    let row = get(d, req.id).await;
    assert_eq!(row.state, JobState::Delayed);
    assert_eq!(row.run_at, at(60));
}

/// A second enqueue of a live key answers the live job's ids with `deduped = true` and inserts
/// nothing, in every live state.
pub async fn job_enqueue_dedupes_a_live_key(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let first = request("conformance.job", "k");
    enqueue(d, &first).await;
    let again = request("conformance.job", "k");
    let result = enqueue(d, &again).await;
    assert_eq!(
        result,
        EnqueueResult {
            id: first.id,
            run_id: first.run_id,
            deduped: true
        }
    );
    assert_eq!(
        d.job_get(&JobGetParams { id: again.id }).await.unwrap(),
        None,
        "a dedupe inserts no row"
    );

    // Still held while running and while suspended.
    let claimed = claim_one(d, "w1", t0()).await;
    assert!(enqueue(d, &request("conformance.job", "k")).await.deduped);
    let park = nack_params(claimed.id, &claimed.by, NackTarget::Park, at(100), at(1));
    assert!(nack(d, &park).await);
    assert_eq!(get(d, first.id).await.state, JobState::Suspended);
    let result = enqueue(d, &request("conformance.job", "k")).await;
    assert!(result.deduped && result.id == first.id);
    assert_eq!(stats_of(d, QUEUE, at(1)).await.suspended, 1);
}

/// Once the job holding a key is finished (done, failed, dead or cancelled), the key is free:
/// the next enqueue inserts a new row.
pub async fn job_enqueue_frees_the_key_once_finished(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let mut holder = enqueue_key(d, "k").await;
    for target in [
        None,
        Some(NackTarget::Fail),
        Some(NackTarget::DeadLetter),
        Some(NackTarget::Retry), // cancelled below, from ready
    ] {
        match target {
            None => {
                let job = claim_one(d, "w1", t0()).await;
                assert!(ack(d, job.id, &job.by, t0()).await);
            }
            Some(NackTarget::Retry) => {
                d.job_cancel(&JobCancelParams {
                    reason: None,
                    id: holder,
                    now: t0(),
                    actor: None,
                })
                .await
                .unwrap();
            }
            Some(target) => {
                let job = claim_one(d, "w1", t0()).await;
                assert!(nack(d, &nack_params(job.id, &job.by, target, t0(), t0())).await);
            }
        }
        assert!(!get(d, holder).await.state.is_live());
        let next = request("conformance.job", "k");
        let result = enqueue(d, &next).await;
        assert!(!result.deduped, "the key should be free after {target:?}");
        assert_eq!(result.id, next.id);
        holder = next.id;
    }
}

/// The key namespace is `(name, tenant, key)`: another name or another tenant is another job;
/// no tenant and the empty tenant are the same namespace.
pub async fn job_enqueue_namespaces_keys_by_name_and_tenant(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let base = request("conformance.a", "k");
    assert!(!enqueue(d, &base).await.deduped);

    let other_name = request("conformance.b", "k");
    assert!(!enqueue(d, &other_name).await.deduped, "another name");

    let mut tenant_x = request("conformance.a", "k");
    tenant_x.tenant_id = Some("x".into());
    assert!(!enqueue(d, &tenant_x).await.deduped, "another tenant");

    let mut tenant_y = request("conformance.a", "k");
    tenant_y.tenant_id = Some("y".into());
    assert!(!enqueue(d, &tenant_y).await.deduped, "a third tenant");

    let mut tenant_x_again = request("conformance.a", "k");
    tenant_x_again.tenant_id = Some("x".into());
    let result = enqueue(d, &tenant_x_again).await;
    assert!(result.deduped && result.id == tenant_x.id, "same tenant");

    let mut empty_tenant = request("conformance.a", "k");
    empty_tenant.tenant_id = Some(String::new());
    let result = enqueue(d, &empty_tenant).await;
    assert!(
        result.deduped && result.id == base.id,
        "no tenant and the empty tenant share a namespace"
    );

    let other_key = request("conformance.a", "k2");
    assert!(!enqueue(d, &other_key).await.deduped, "another key");
    assert_eq!(stats_of(d, QUEUE, t0()).await.ready, 5);
}

/// An id that already names a row (an outbox re-publish) inserts nothing and answers that row,
/// whether it is live or finished, whatever the key.
pub async fn job_enqueue_dedupes_by_id(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let first = request("conformance.job", "k1");
    enqueue(d, &first).await;

    let mut same_id = request("conformance.job", "another-key");
    same_id.id = first.id;
    let result = enqueue(d, &same_id).await;
    assert_eq!(
        result,
        EnqueueResult {
            id: first.id,
            run_id: first.run_id,
            deduped: true
        },
        "live row"
    );

    let job = claim_one(d, "w1", t0()).await;
    assert!(ack(d, job.id, &job.by, t0()).await);
    let mut after_done = request("conformance.job", "k1");
    after_done.id = first.id;
    let result = enqueue(d, &after_done).await;
    assert_eq!(
        result,
        EnqueueResult {
            id: first.id,
            run_id: first.run_id,
            deduped: true
        },
        "finished row"
    );
    let row = get(d, first.id).await;
    assert_eq!(row.state, JobState::Done, "the finished row is untouched");
    assert_eq!(stats_of(d, QUEUE, t0()).await.ready, 0);
}

/// `ConflictPolicy::Error` refuses a live key with `X_JOB_DUPLICATE` and inserts nothing; it
/// inserts as usual when the key is free.
pub async fn job_enqueue_refuses_a_live_key_under_conflict_error(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let mut first = request("conformance.job", "k");
    first.on_conflict = ConflictPolicy::Error;
    assert!(!enqueue(d, &first).await.deduped);

    let mut again = request("conformance.job", "k");
    again.on_conflict = ConflictPolicy::Error;
    assert_refused(d.job_enqueue(&again).await, ErrorCode::JobDuplicate);
    assert_eq!(
        d.job_get(&JobGetParams { id: again.id }).await.unwrap(),
        None
    );
    assert_eq!(stats_of(d, QUEUE, t0()).await.ready, 1);
}

/// Re-sending an id that names a row (an outbox re-publish) answers that row, deduped, even
/// under `ConflictPolicy::Error`: it is the same job, not a duplicate of another.
pub async fn job_enqueue_of_an_existing_id_answers_it_whatever_the_policy(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let mut first = request("conformance.job", "k");
    first.on_conflict = ConflictPolicy::Error;
    enqueue(d, &first).await;
    let live = enqueue(d, &first).await;
    assert!(live.deduped && live.id == first.id, "live row");

    let job = claim_one(d, "w1", t0()).await;
    assert!(ack(d, job.id, &job.by, t0()).await);
    let mut holder = request("conformance.job", "k");
    holder.on_conflict = ConflictPolicy::Error;
    enqueue(d, &holder).await;
    let finished = enqueue(d, &first).await;
    assert!(
        finished.deduped && finished.id == first.id,
        "a finished row under its own id, while another job holds the key"
    );
}

/// `job_enqueue_many` answers each request as `job_enqueue` would, in order, including a key
/// repeated inside the batch.
pub async fn job_enqueue_many_answers_each_request(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let held = request("conformance.job", "held");
    enqueue(d, &held).await;
    let batch = vec![
        request("conformance.job", "a"),
        request("conformance.job", "b"),
        request("conformance.job", "a"),
        request("conformance.job", "held"),
    ];
    let results = d.job_enqueue_many(&batch).await.unwrap();
    assert_eq!(results.len(), 4);
    assert_eq!(
        results[0],
        EnqueueResult {
            id: batch[0].id,
            run_id: batch[0].run_id,
            deduped: false
        }
    );
    assert_eq!(
        results[1],
        EnqueueResult {
            id: batch[1].id,
            run_id: batch[1].run_id,
            deduped: false
        }
    );
    assert_eq!(
        results[2],
        EnqueueResult {
            id: batch[0].id,
            run_id: batch[0].run_id,
            deduped: true
        },
        "a key repeated in the batch"
    );
    assert_eq!(
        results[3],
        EnqueueResult {
            id: held.id,
            run_id: held.run_id,
            deduped: true
        },
        "a key held before the batch"
    );
    assert_eq!(stats_of(d, QUEUE, t0()).await.ready, 3);
    assert!(d.job_enqueue_many(&[]).await.unwrap().is_empty());
}

/// `job_enqueue_many` is all or nothing: when one request is refused, none of the batch is
/// stored and the keys it took are free again.
pub async fn job_enqueue_many_is_all_or_nothing(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let held = request("conformance.job", "held");
    enqueue(d, &held).await;
    let mut refused = request("conformance.job", "held");
    refused.on_conflict = ConflictPolicy::Error;
    let batch = vec![request("conformance.job", "a"), refused];
    assert_refused(d.job_enqueue_many(&batch).await, ErrorCode::JobDuplicate);
    assert_eq!(
        d.job_get(&JobGetParams { id: batch[0].id }).await.unwrap(),
        None,
        "the batch left no row"
    );
    assert_eq!(stats_of(d, QUEUE, t0()).await.ready, 1);
    assert!(
        !enqueue(d, &request("conformance.job", "a")).await.deduped,
        "its key is free"
    );
}

/// Twenty enqueues of one key at once insert exactly one row; all twenty answer its ids.
pub async fn job_enqueue_of_one_key_from_many_tasks_inserts_one_row(driver: Arc<dyn JobDriver>) {
    let barrier = Arc::new(tokio::sync::Barrier::new(20));
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let driver = driver.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                let req = request("conformance.job", "contended");
                barrier.wait().await;
                driver.job_enqueue(&req).await
            })
        })
        .collect();
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.expect("task panicked").expect("enqueue refused"));
    }
    let inserted: Vec<_> = results.iter().filter(|r| !r.deduped).collect();
    assert_eq!(inserted.len(), 1, "exactly one insert: {results:?}");
    let ids: HashSet<(Uuid, Uuid)> = results.iter().map(|r| (r.id, r.run_id)).collect();
    assert_eq!(
        ids.len(),
        1,
        "every enqueue answers the one row: {results:?}"
    );
    assert_eq!(stats_of(&*driver, QUEUE, t0()).await.ready, 1);
}

/// `job_enqueue_many` stores the batch at one `now`, the latest of its requests': a job due at
/// its own `now`, read a few microseconds before another request's, is `ready`, never
/// `delayed`; a job due after the batch's `now` is `delayed`.
pub async fn job_enqueue_many_stores_jobs_due_at_the_batch_now_ready(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let micros = |n: i64| t0() + chrono::Duration::microseconds(n);
    let batch: Vec<EnqueueRequest> = (0..3)
        .map(|n| {
            let mut req = request("conformance.job", &format!("due-{n}"));
            req.now = micros(n);
            req.run_at = micros(n);
            req
        })
        .chain(std::iter::once({
            let mut later = request("conformance.job", "later");
            later.now = micros(0);
            later.run_at = micros(3);
            later
        }))
        .collect();
    d.job_enqueue_many(&batch).await.unwrap();
    for due in &batch[..3] {
        let row = get(d, due.id).await;
        assert_eq!(row.state, JobState::Ready, "{}", due.idempotency_key);
        assert_eq!(row.created_at, micros(2), "one `now` for the whole batch");
    }
    assert_eq!(get(d, batch[3].id).await.state, JobState::Delayed);
}

/// Through the client on the system clock, every job of an `enqueue_many` is due now: each is
/// stored `ready` and listed by the operator's `state = ready` filter (`jobs ls --state ready`).
pub async fn job_enqueue_many_through_the_client_lists_every_due_job_ready(
    driver: Arc<dyn JobDriver>,
) {
    use crate::driver::introspect::JobListParams;
    let jobs = crate::client::Jobs::with_clock(driver.clone(), Arc::new(crate::clock::SystemClock));
    let inputs = (0..50).map(|n| super::worker::subject(&format!("batch-{n}")));
    let queued = jobs
        .enqueue_many::<super::worker::Trip, _>(inputs)
        .await
        .unwrap();
    assert_eq!(queued.len(), 50);
    for job in &queued {
        assert_eq!(get(&*driver, job.id).await.state, JobState::Ready);
    }
    let Some(operator) = driver.introspect() else {
        return;
    };
    let page = operator
        .job_list(&JobListParams {
            state: Some(JobState::Ready),
            limit: Some(200),
            ..JobListParams::default()
        })
        .await
        .unwrap();
    let listed: HashSet<Uuid> = page.jobs.iter().map(|j| j.id).collect();
    assert_eq!(listed, queued.iter().map(|j| j.id).collect::<HashSet<_>>());
}

/// A debounced request (`ConflictPolicy::Replace`) whose key a queued job holds gives that job
/// its input and run time and answers its ids deduped: pushed back it turns `delayed`, pulled
/// due it turns `ready`, and the claim takes it with the latest input.
pub async fn job_enqueue_replace_gives_a_queued_holder_the_latest_input_and_time(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let mut first = request("conformance.job", "k");
    first.on_conflict = ConflictPolicy::Replace;
    first.run_at = at(5);
    assert!(!enqueue(d, &first).await.deduped);
    assert_eq!(get(d, first.id).await.state, JobState::Delayed);

    let mut later = request("conformance.job", "k");
    later.on_conflict = ConflictPolicy::Replace;
    later.input = serde_json::json!({ "key": "k", "version": 2 });
    later.run_at = at(10);
    later.now = at(3);
    let answered = enqueue(d, &later).await;
    assert_eq!(
        answered,
        EnqueueResult {
            id: first.id,
            run_id: first.run_id,
            deduped: true
        }
    );
    assert_eq!(
        d.job_get(&JobGetParams { id: later.id }).await.unwrap(),
        None,
        "no second row"
    );
    let row = get(d, first.id).await;
    assert_eq!((row.state, row.run_at), (JobState::Delayed, at(10)));
    assert_eq!(row.input, later.input);
    claim_none(d, "w1", at(9)).await;

    let mut due = request("conformance.job", "k");
    due.on_conflict = ConflictPolicy::Replace;
    due.input = serde_json::json!({ "key": "k", "version": 3 });
    due.run_at = at(4);
    due.now = at(4);
    assert!(enqueue(d, &due).await.deduped);
    let row = get(d, first.id).await;
    assert_eq!((row.state, row.run_at), (JobState::Ready, at(4)));
    let job = claim_one(d, "w1", at(4)).await;
    assert_eq!(job.id, first.id);
    assert_eq!(*job.input, due.input);
    assert_eq!(stats_of(d, QUEUE, at(4)).await.ready, 0);
}

/// A debounced request whose key a started job holds (running) leaves it as it is and answers
/// it deduped, as a plain dedupe does; in a batch, a key repeated is replaced by the later
/// request, and a refusal elsewhere in the batch takes the replacement back with the rest.
pub async fn job_enqueue_replace_leaves_a_started_holder_and_is_all_or_nothing_in_a_batch(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let first = request("conformance.job", "run");
    enqueue(d, &first).await;
    let job = claim_one(d, "w1", t0()).await;
    let mut again = request("conformance.job", "run");
    again.on_conflict = ConflictPolicy::Replace;
    again.input = serde_json::json!({ "key": "run", "version": 2 });
    again.run_at = at(10);
    let answered = enqueue(d, &again).await;
    assert!(answered.deduped && answered.id == first.id);
    let row = get(d, first.id).await;
    assert_eq!(row.state, JobState::Running);
    assert_eq!(row.input, first.input, "a started job keeps its input");
    assert!(ack(d, job.id, &job.by, t0()).await);

    let mut a1 = request("conformance.job", "a");
    a1.on_conflict = ConflictPolicy::Replace;
    let mut a2 = request("conformance.job", "a");
    a2.on_conflict = ConflictPolicy::Replace;
    a2.input = serde_json::json!({ "key": "a", "version": 2 });
    a2.run_at = at(7);
    let results = d.job_enqueue_many(&[a1.clone(), a2.clone()]).await.unwrap();
    assert!(!results[0].deduped);
    assert_eq!((results[1].id, results[1].deduped), (a1.id, true));
    let row = get(d, a1.id).await;
    assert_eq!((row.state, row.run_at), (JobState::Delayed, at(7)));
    assert_eq!(row.input, a2.input);

    let mut a3 = request("conformance.job", "a");
    a3.on_conflict = ConflictPolicy::Replace;
    a3.input = serde_json::json!({ "key": "a", "version": 3 });
    let held = request("conformance.job", "held");
    enqueue(d, &held).await;
    let mut refused = request("conformance.job", "held");
    refused.on_conflict = ConflictPolicy::Error;
    assert_refused(
        d.job_enqueue_many(&[a3, refused]).await,
        ErrorCode::JobDuplicate,
    );
    let row = get(d, a1.id).await;
    assert_eq!(
        (row.state, row.run_at, row.input),
        (JobState::Delayed, at(7), a2.input),
        "the refused batch took its replacement back"
    );
}
