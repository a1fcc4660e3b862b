//! Typed enqueue: ids, live-key dedupe, the key namespace, and the per-call options.

use std::sync::Mutex;
use std::time::Duration;

use jobs::prelude::*;
use jobs::testing::TestKit;
use jobs::{ErrorClass, ExecutionOutcome};

use crate::support::store::Store;
use crate::support::time::elapsed;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct PingInput {
    id: u64,
    org: String,
}

/// Tenants the body of `ping` saw, by input id.
static PING_TENANTS: Mutex<Vec<(u64, Option<String>)>> = Mutex::new(Vec::new());

#[job(key = "ping:{id}", tenant = org)]
async fn ping(run: Run, input: PingInput) -> Result<u64, JobError> {
    PING_TENANTS
        .lock()
        .unwrap()
        .push((input.id, run.tenant().map(str::to_string)));
    Ok(input.id)
}

/// Same key template and tenant as `ping`, another name: another key namespace.
#[job(name = "pong", key = "ping:{id}", tenant = org)]
async fn pong_job(_run: Run, input: PingInput) -> Result<u64, JobError> {
    Ok(input.id)
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct KeyedInput {
    key: String,
}

#[job(key = |input| input.key.clone(), tenant = none)]
async fn keyed(_run: Run, _input: KeyedInput) -> Result<(), JobError> {
    Ok(())
}

fn acme(id: u64) -> PingInput {
    PingInput {
        id,
        org: "acme".into(),
    }
}

#[tokio::test]
async fn enqueue_answers_ids_and_a_live_key_dedupes() {
    let kit = TestKit::new();
    let first = Ping::enqueue(kit.jobs(), acme(1)).await.unwrap();
    assert!(!first.deduped);

    let row = kit.job(first.id).await;
    assert_eq!(row.run_id, first.run_id);
    assert_eq!(row.name, "ping");
    assert_eq!(row.queue, "default");
    assert_eq!(row.state, JobState::Ready);
    assert_eq!(row.idempotency_key, "ping:1");
    assert_eq!(row.tenant_id.as_deref(), Some("acme"));
    assert_eq!(row.attempt, 0);
    assert_eq!(row.max_attempts, 3);

    let again = Ping::enqueue(kit.jobs(), acme(1)).await.unwrap();
    assert!(again.deduped);
    assert_eq!(again.id, first.id);
    assert_eq!(again.run_id, first.run_id);
    assert_eq!(
        kit.driver().live_count(),
        1,
        "a deduped enqueue inserts nothing"
    );

    let other = Ping::enqueue(kit.jobs(), acme(2)).await.unwrap();
    assert!(!other.deduped);
    assert_ne!(other.id, first.id);
    assert_eq!(kit.driver().live_count(), 2);

    let executions = kit.run_until_idle().await;
    assert_eq!(executions.len(), 2);
    assert!(executions
        .iter()
        .all(|e| e.outcome == ExecutionOutcome::Completed));
    assert_eq!(kit.job(first.id).await.state, JobState::Done);

    // Finished: the key is free again.
    let after = Ping::enqueue(kit.jobs(), acme(1)).await.unwrap();
    assert!(!after.deduped);
    assert_ne!(after.id, first.id);
    assert_ne!(after.run_id, first.run_id);
    assert_eq!(kit.job(after.id).await.state, JobState::Ready);
    assert_eq!(kit.job(first.id).await.state, JobState::Done);
}

#[tokio::test]
async fn a_running_or_suspended_job_still_holds_its_key() {
    let kit = TestKit::new();
    let first = Ping::enqueue(kit.jobs(), acme(3)).await.unwrap();
    // Claim it by hand: running is live.
    let claimed = kit
        .jobs()
        .driver()
        .job_claim(&jobs::driver::ClaimParams {
            demand: vec![jobs::driver::QueueDemand {
                queue: "default".into(),
                limit: 1,
            }],
            worker_id: "by-hand".into(),
            visibility_timeout: Duration::from_secs(30),
            drop_exhausted: Vec::new(),
            fair_after: String::new(),
            now: kit.jobs().now(),
        })
        .await
        .unwrap();
    assert_eq!(claimed.jobs.len(), 1);
    assert_eq!(kit.job(first.id).await.state, JobState::Running);
    let again = Ping::enqueue(kit.jobs(), acme(3)).await.unwrap();
    assert!(again.deduped);
    assert_eq!(again.id, first.id);
}

#[tokio::test]
async fn keys_are_namespaced_by_name_tenant_and_key() {
    let kit = TestKit::new();
    let ping = Ping::enqueue(kit.jobs(), acme(1)).await.unwrap();
    let pong = PongJob::enqueue(kit.jobs(), acme(1)).await.unwrap();
    assert!(!pong.deduped, "another name is another namespace");
    assert_ne!(pong.id, ping.id);
    assert_eq!(kit.job(pong.id).await.name, "pong");

    let globex = Ping::enqueue(
        kit.jobs(),
        PingInput {
            id: 1,
            org: "globex".into(),
        },
    )
    .await
    .unwrap();
    assert!(!globex.deduped, "another tenant is another namespace");
    assert_ne!(globex.id, ping.id);

    // Another tenant than the input's is refused unless the call says it crosses tenants.
    let refused = Ping::enqueue_with(
        kit.jobs(),
        acme(1),
        EnqueueOptions::new().tenant(Some("globex".into())),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.code(), Some(ErrorCode::JobTenantMismatch));
    // Said so, the tenant override files the row (and its key) under the stated tenant.
    let overridden = Ping::enqueue_with(
        kit.jobs(),
        acme(1),
        EnqueueOptions::new()
            .tenant(Some("globex".into()))
            .cross_tenant(),
    )
    .await
    .unwrap();
    assert!(overridden.deduped);
    assert_eq!(overridden.id, globex.id);

    let untenanted = Ping::enqueue_with(kit.jobs(), acme(1), EnqueueOptions::new().tenant(None))
        .await
        .unwrap();
    assert!(!untenanted.deduped);
    assert_eq!(kit.job(untenanted.id).await.tenant_id, None);
    assert_eq!(kit.driver().live_count(), 4);
}

#[tokio::test]
async fn the_run_tenant_is_the_declared_one_whatever_the_row_is_filed_under() {
    let kit = TestKit::new();
    let queued = Ping::enqueue_with(
        kit.jobs(),
        acme(77),
        EnqueueOptions::new()
            .tenant(Some("billing-bucket".into()))
            .cross_tenant(),
    )
    .await
    .unwrap();
    assert_eq!(
        kit.job(queued.id).await.tenant_id.as_deref(),
        Some("billing-bucket")
    );
    kit.run_until_idle().await;
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
    let seen = PING_TENANTS.lock().unwrap().clone();
    let tenant = seen
        .iter()
        .find(|(id, _)| *id == 77)
        .map(|(_, t)| t.clone());
    assert_eq!(tenant, Some(Some("acme".to_string())));
}

#[tokio::test]
async fn a_delay_parks_the_job_until_the_clock_passes_it() {
    let kit = TestKit::new();
    let start = kit.jobs().now();
    let queued = Ping::enqueue_with(
        kit.jobs(),
        acme(1),
        EnqueueOptions::new().delay(Duration::from_secs(60)),
    )
    .await
    .unwrap();
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Delayed);
    assert_eq!(elapsed(start, row.run_at), Duration::from_secs(60));

    assert!(kit.run_until_idle().await.is_empty());
    kit.advance(Duration::from_secs(59));
    assert!(kit.run_until_idle().await.is_empty());
    assert_eq!(kit.job(queued.id).await.state, JobState::Delayed);
    kit.advance(Duration::from_secs(1));
    let executions = kit.run_until_idle().await;
    assert_eq!(executions.len(), 1);
    assert_eq!(executions[0].outcome, ExecutionOutcome::Completed);
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
}

#[tokio::test]
async fn run_at_sets_the_due_time() {
    let kit = TestKit::new();
    let start = kit.jobs().now();
    let at = jobs::clock::add(start, Duration::from_secs(3600));
    let queued = Ping::enqueue_with(kit.jobs(), acme(1), EnqueueOptions::new().run_at(at))
        .await
        .unwrap();
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Delayed);
    assert_eq!(row.run_at, at);
    kit.advance(Duration::from_secs(3599));
    assert!(kit.run_until_idle().await.is_empty());
    kit.advance(Duration::from_secs(1));
    assert_eq!(kit.run_until_idle().await.len(), 1);
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);

    // A run time already past is due now.
    let late = Ping::enqueue_with(kit.jobs(), acme(2), EnqueueOptions::new().run_at(start))
        .await
        .unwrap();
    assert_eq!(kit.job(late.id).await.state, JobState::Ready);
}

#[tokio::test]
async fn a_lowercase_run_id_is_kept_and_anything_else_is_refused() {
    let kit = TestKit::new();
    let run_id = uuid::Uuid::new_v4();
    let text = run_id.to_string();
    assert_eq!(text, text.to_lowercase());
    let queued = Ping::enqueue_with(kit.jobs(), acme(1), EnqueueOptions::new().run_id(&text))
        .await
        .unwrap();
    assert_eq!(queued.run_id, run_id);
    assert_eq!(kit.job(queued.id).await.run_id, run_id);

    let upper = uuid::Uuid::new_v4().to_string().to_uppercase();
    let simple = uuid::Uuid::new_v4().simple().to_string();
    for bad in [upper.as_str(), simple.as_str(), "not-a-uuid", ""] {
        let error = Ping::enqueue_with(kit.jobs(), acme(2), EnqueueOptions::new().run_id(bad))
            .await
            .unwrap_err();
        assert_eq!(error.code(), Some(ErrorCode::IdInvalid), "{bad:?}: {error}");
    }
    assert_eq!(
        kit.driver().live_count(),
        1,
        "a refused enqueue inserts nothing"
    );
}

#[tokio::test]
async fn a_queue_override_lands_on_that_queue() {
    let kit = TestKit::new();
    let queued = Ping::enqueue_with(kit.jobs(), acme(1), EnqueueOptions::new().queue("slow"))
        .await
        .unwrap();
    assert_eq!(kit.job(queued.id).await.queue, "slow");
    // The kit's worker serves the declared queues only.
    assert!(!kit.worker().queues().iter().any(|q| q == "slow"));
    assert!(kit.run_until_idle().await.is_empty());
    assert_eq!(kit.job(queued.id).await.state, JobState::Ready);

    let slow = kit.jobs().worker().queues(["slow"]).build().unwrap();
    let executions = slow.tick().await.unwrap();
    assert_eq!(executions.len(), 1);
    assert_eq!(executions[0].job_id, queued.id);
    assert_eq!(executions[0].outcome, ExecutionOutcome::Completed);
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
}

#[tokio::test]
async fn enqueue_many_answers_each_input_as_enqueue_would() {
    let kit = TestKit::new();
    let results = Ping::enqueue_many(kit.jobs(), [acme(1), acme(2), acme(1)])
        .await
        .unwrap();
    assert_eq!(results.len(), 3);
    assert!(!results[0].deduped);
    assert!(!results[1].deduped);
    assert_ne!(results[0].id, results[1].id);
    assert!(results[2].deduped);
    assert_eq!(results[2].id, results[0].id);
    assert_eq!(results[2].run_id, results[0].run_id);
    assert_eq!(kit.driver().live_count(), 2);

    let none = Ping::enqueue_many(kit.jobs(), Vec::new()).await.unwrap();
    assert!(none.is_empty());

    // A key already live before the batch is deduped too.
    let more = Ping::enqueue_many(kit.jobs(), [acme(2), acme(3)])
        .await
        .unwrap();
    assert!(more[0].deduped);
    assert_eq!(more[0].id, results[1].id);
    assert!(!more[1].deduped);
    assert_eq!(kit.run_until_idle().await.len(), 3);
}

#[tokio::test]
async fn error_on_duplicate_refuses_a_live_key() {
    let kit = TestKit::new();
    let first = Ping::enqueue_with(
        kit.jobs(),
        acme(1),
        EnqueueOptions::new().error_on_duplicate(),
    )
    .await
    .unwrap();
    assert!(!first.deduped);
    let error = Ping::enqueue_with(
        kit.jobs(),
        acme(1),
        EnqueueOptions::new().error_on_duplicate(),
    )
    .await
    .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::JobDuplicate));
    assert_eq!(kit.driver().live_count(), 1);

    kit.run_until_idle().await;
    let after = Ping::enqueue_with(
        kit.jobs(),
        acme(1),
        EnqueueOptions::new().error_on_duplicate(),
    )
    .await
    .unwrap();
    assert!(!after.deduped);
    assert_ne!(after.id, first.id);
}

#[tokio::test]
async fn an_empty_derived_key_is_refused() {
    let kit = TestKit::new();
    let error = Keyed::enqueue(kit.jobs(), KeyedInput { key: String::new() })
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::IdempotencyRequired));
    assert_eq!(kit.driver().live_count(), 0);

    let fine = Keyed::enqueue(kit.jobs(), KeyedInput { key: "k-1".into() })
        .await
        .unwrap();
    assert_eq!(kit.job(fine.id).await.idempotency_key, "k-1");
    assert_eq!(kit.job(fine.id).await.tenant_id, None);
}

/// The name grammar (`jobs_grammar::name`, the rule the macros apply to a literal) applied to
/// the values of an enqueue, by the client before any driver: the same refusals on each.
#[tokio::test]
async fn names_and_tenants_outside_the_grammar_are_refused_alike_on_every_driver() {
    let postgres = Store::postgres("names_and_tenants_outside_the_grammar").await;
    let sqlite = Store::sqlite("names_and_tenants_outside_the_grammar").await;
    for (driver, jobs) in [
        ("memory", Jobs::memory()),
        ("postgres", postgres.jobs()),
        ("sqlite", sqlite.jobs()),
    ] {
        for queue in ["Bad Queue!", "", "mail:urgent"] {
            let error = Ping::enqueue_with(&jobs, acme(1), EnqueueOptions::new().queue(queue))
                .await
                .unwrap_err();
            assert_eq!(
                error.code(),
                Some(ErrorCode::JobDeclarationInvalid),
                "{driver} {queue:?}: {error}"
            );
            assert_eq!(error.class(), ErrorClass::Terminal);
            assert!(error.fix().unwrap().contains("ASCII letters"), "{error}");
        }
        let error =
            Ping::enqueue_with(&jobs, acme(1), EnqueueOptions::new().queue("q".repeat(201)))
                .await
                .unwrap_err();
        assert_eq!(
            error.code(),
            Some(ErrorCode::LimitExceeded),
            "{driver}: {error}"
        );
        for org in ["", "  "] {
            let input = PingInput {
                id: 1,
                org: org.into(),
            };
            let error = Ping::enqueue(&jobs, input).await.unwrap_err();
            assert_eq!(
                error.code(),
                Some(ErrorCode::JobTenantRequired),
                "{driver} {org:?}: {error}"
            );
            assert_eq!(error.class(), ErrorClass::Terminal);
        }
        // A worker is held to the same rule for the queues it claims from.
        let error = jobs.worker().queues(["Bad Queue!"]).build().unwrap_err();
        assert_eq!(
            error.code(),
            Some(ErrorCode::JobDeclarationInvalid),
            "{driver}: {error}"
        );
        // Nothing was stored: the key is still free, and good values pass.
        let stored =
            Ping::enqueue_with(&jobs, acme(1), EnqueueOptions::new().queue("mail.urgent-2"))
                .await
                .unwrap();
        assert!(!stored.deduped, "{driver}");
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct SearchInput {
    user: u64,
    query: String,
}

/// Queries each debounced run saw.
static SEARCHED: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[job(key = "reindex:{user}", tenant = none, debounce = "5s")]
async fn reindex(_run: Run, input: SearchInput) -> Result<(), JobError> {
    SEARCHED.lock().unwrap().push(input.query);
    Ok(())
}

/// `debounce = "5s"`: a burst of enqueues of one key runs once, five seconds after the last
/// one, with the last input; each enqueue of the burst answers the one job.
#[tokio::test]
async fn a_debounced_burst_runs_once_with_its_last_input() {
    let kit = TestKit::new();
    let enqueue = |query: &str| {
        Reindex::enqueue(
            kit.jobs(),
            SearchInput {
                user: 7,
                query: query.into(),
            },
        )
    };
    let first = enqueue("r").await.unwrap();
    assert!(!first.deduped);
    let start = kit.jobs().now();
    assert_eq!(
        elapsed(start, kit.job(first.id).await.run_at),
        Duration::from_secs(5)
    );
    for query in ["ru", "rus", "rust"] {
        kit.advance(Duration::from_secs(3));
        assert!(kit.run_until_idle().await.is_empty(), "not due yet");
        let again = enqueue(query).await.unwrap();
        assert_eq!((again.id, again.deduped), (first.id, true));
    }
    kit.advance(Duration::from_secs(4));
    assert!(
        kit.run_until_idle().await.is_empty(),
        "pushed back by the last enqueue"
    );
    kit.advance(Duration::from_secs(1));
    let ran = kit.run_until_idle().await;
    assert_eq!(ran.len(), 1);
    assert_eq!(ran[0].outcome, ExecutionOutcome::Completed);
    assert_eq!(*SEARCHED.lock().unwrap(), ["rust"]);
    let row = kit.job(first.id).await;
    assert_eq!(row.state, JobState::Done);
    assert_eq!(elapsed(start, row.run_at), Duration::from_secs(14));

    // Finished: the next enqueue of the key is a new job, due in its own window.
    let next = enqueue("rusty").await.unwrap();
    assert!(!next.deduped);
    assert_ne!(next.id, first.id);
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct ReportInput {
    customer: u64,
}

#[job(key = "report:{customer}", tenant = none, unique(for = "1h"))]
async fn daily_report(_run: Run, _input: ReportInput) -> Result<(), JobError> {
    Ok(())
}

/// `unique(for = "1h")` through the client and the test clock: the job answers its key for an
/// hour after its enqueue, done or not; an hour after its enqueue the key makes a new job.
#[tokio::test]
async fn a_unique_period_answers_the_finished_job_until_it_ends() {
    let kit = TestKit::new();
    assert_eq!(
        DailyReport::descriptor().unique_for,
        Some(Duration::from_secs(3600))
    );
    let input = || ReportInput { customer: 7 };
    let first = DailyReport::enqueue(kit.jobs(), input()).await.unwrap();
    kit.advance(Duration::from_secs(600));
    assert_eq!(kit.run_until_idle().await.len(), 1);
    assert_eq!(kit.job(first.id).await.state, JobState::Done);

    kit.advance(Duration::from_secs(2999)); // 59 min 59 s after the enqueue
    let again = DailyReport::enqueue(kit.jobs(), input()).await.unwrap();
    assert_eq!((again.id, again.deduped), (first.id, true));
    let refused = DailyReport::enqueue_with(
        kit.jobs(),
        input(),
        EnqueueOptions::new().error_on_duplicate(),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.code(), Some(ErrorCode::JobDuplicate));

    kit.advance(Duration::from_secs(1)); // the hour is over
    let next = DailyReport::enqueue(kit.jobs(), input()).await.unwrap();
    assert!(!next.deduped);
    assert_ne!(next.id, first.id);
}

/// `EnqueueOptions::unique_for` gives one enqueue's job its own period, declared or not; a
/// period under 1 ms or over 10 years is refused with `X_INVARIANT` before anything is written.
#[tokio::test]
async fn an_enqueue_names_its_own_unique_period_within_the_limits() {
    let kit = TestKit::new();
    let day = Duration::from_secs(24 * 3600);
    let first = Ping::enqueue_with(kit.jobs(), acme(1), EnqueueOptions::new().unique_for(day))
        .await
        .unwrap();
    assert_eq!(kit.run_until_idle().await.len(), 1);
    kit.advance(Duration::from_secs(23 * 3600));
    let again = Ping::enqueue(kit.jobs(), acme(1)).await.unwrap();
    assert_eq!((again.id, again.deduped), (first.id, true));

    // A shorter period than the declaration's, for this one job.
    let short = DailyReport::enqueue_with(
        kit.jobs(),
        ReportInput { customer: 9 },
        EnqueueOptions::new().unique_for(Duration::from_secs(60)),
    )
    .await
    .unwrap();
    assert_eq!(kit.run_until_idle().await.len(), 1);
    kit.advance(Duration::from_secs(60));
    let after = DailyReport::enqueue(kit.jobs(), ReportInput { customer: 9 })
        .await
        .unwrap();
    assert!(!after.deduped && after.id != short.id);

    let ten_years = jobs::limits::MAX_UNIQUE_FOR;
    for period in [
        Duration::ZERO,
        Duration::from_micros(999),
        ten_years + Duration::from_millis(1),
    ] {
        let refused = Ping::enqueue_with(
            kit.jobs(),
            acme(2),
            EnqueueOptions::new().unique_for(period),
        )
        .await
        .unwrap_err();
        assert_eq!(refused.code(), Some(ErrorCode::Invariant), "{period:?}");
        assert!(
            refused.to_string().contains("unique period"),
            "names what is wrong: {refused}"
        );
    }
    let at_the_limit = Ping::enqueue_with(
        kit.jobs(),
        acme(2),
        EnqueueOptions::new().unique_for(ten_years),
    )
    .await
    .unwrap();
    assert!(!at_the_limit.deduped);
}
