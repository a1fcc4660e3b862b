//! The documented limits ([`crate::limits`]): a value over a limit, or one Postgres cannot store
//! (a NUL), is refused the same way on every driver, before anything is written, with a
//! terminal code that names the limit and never the value. The largest values within the
//! limits are stored, whatever their entropy.
//!
//! The refusals are the client's and the run's (one place, ahead of every driver), so these
//! cases go through a [`Jobs`] client and a [`Worker`](crate::Worker), not the port.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::worker::{descriptor, subject, tick, Subject};
use super::*;
use crate::client::Jobs;
use crate::clock::TestClock;
use crate::descriptor::JobDescriptor;
use crate::driver::lease::LeaseHoldersParams;
use crate::driver::{EventFindParams, QueueStatsParams, StepListParams};
use crate::enqueue::EnqueueOptions;
use crate::error::ErrorClass;
use crate::job::Job;
use crate::limits::{
    MAX_EVENT_KEY_BYTES, MAX_EVENT_NAME_BYTES, MAX_IDEMPOTENCY_KEY_BYTES, MAX_JOB_NAME_BYTES,
    MAX_LOCK_KEY_BYTES, MAX_QUEUE_BYTES, MAX_STEP_NAME_BYTES, MAX_TENANT_BYTES,
};
use crate::lock::LockOptions;
use crate::registry::Registry;
use crate::run::Run;
use crate::worker::ExecutionOutcome;

/// What the enqueue cases store: the idempotency key is `key`, verbatim; `body` is the rest.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Parcel {
    /// The idempotency key, as is.
    pub key: String,
    /// Anything.
    pub body: serde_json::Value,
}

fn parcel(key: &str) -> Parcel {
    Parcel {
        key: key.to_string(),
        body: serde_json::json!({ "n": 1 }),
    }
}

/// Keyed by its input's `key`, verbatim; does nothing.
#[derive(Debug)]
pub struct Carrier;

impl Job for Carrier {
    type Input = Parcel;
    type Output = ();
    const DESCRIPTOR: JobDescriptor = descriptor("conformance.carrier");

    fn idempotency_key(input: &Parcel) -> String {
        input.key.clone()
    }

    fn tenant(_: &Parcel) -> Option<String> {
        None
    }

    fn run(_run: Run, _input: Parcel) -> BoxFuture<'static, Result<(), JobError>> {
        Box::pin(async { Ok(()) })
    }
}

/// A job name of exactly [`MAX_JOB_NAME_BYTES`] (200) bytes.
const LONGEST_NAME: &str = "conformance.longest-name.\
    nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn\
    nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn";

/// A job name one byte over [`MAX_JOB_NAME_BYTES`].
const OVERLONG_NAME: &str = "conformance.overlong-name.\
    nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn\
    nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn";

/// [`Carrier`] under the longest job name.
#[derive(Debug)]
pub struct LongestName;

impl Job for LongestName {
    type Input = Parcel;
    type Output = ();
    const DESCRIPTOR: JobDescriptor = descriptor(LONGEST_NAME);

    fn idempotency_key(input: &Parcel) -> String {
        input.key.clone()
    }

    fn tenant(_: &Parcel) -> Option<String> {
        None
    }

    fn run(_run: Run, _input: Parcel) -> BoxFuture<'static, Result<(), JobError>> {
        Box::pin(async { Ok(()) })
    }
}

/// [`Carrier`] under a job name one byte too long.
#[derive(Debug)]
pub struct OverlongName;

impl Job for OverlongName {
    type Input = Parcel;
    type Output = ();
    const DESCRIPTOR: JobDescriptor = descriptor(OVERLONG_NAME);

    fn idempotency_key(input: &Parcel) -> String {
        input.key.clone()
    }

    fn tenant(_: &Parcel) -> Option<String> {
        None
    }

    fn run(_run: Run, _input: Parcel) -> BoxFuture<'static, Result<(), JobError>> {
        Box::pin(async { Ok(()) })
    }
}

/// Breaks the limit its input's key names, inside a run.
#[derive(Debug)]
pub struct Misuse;

impl Job for Misuse {
    type Input = Subject;
    type Output = ();
    const DESCRIPTOR: JobDescriptor = descriptor("conformance.misuse");

    fn idempotency_key(input: &Subject) -> String {
        input.key.clone()
    }

    fn tenant(_: &Subject) -> Option<String> {
        None
    }

    fn run(run: Run, input: Subject) -> BoxFuture<'static, Result<(), JobError>> {
        Box::pin(async move {
            let one = || async { Ok::<_, JobError>(1u64) };
            match input.key.as_str() {
                "step-name-long" => {
                    run.step(&"s".repeat(MAX_STEP_NAME_BYTES + 1), one())
                        .await?;
                }
                "step-name-nul" => {
                    run.step("step\0name", one()).await?;
                }
                "step-output-nul" => {
                    run.step("out", async { Ok::<_, JobError>("x\0y".to_string()) })
                        .await?;
                }
                "wait-name-long" => {
                    let name = "e".repeat(MAX_EVENT_NAME_BYTES + 1);
                    run.wait_for_event::<u64>(&name, "k", "1h").await?;
                }
                "wait-key-long" => {
                    let key = "k".repeat(MAX_EVENT_KEY_BYTES + 1);
                    run.wait_for_event::<u64>("e", &key, "1h").await?;
                }
                "progress-note-nul" => {
                    run.progress(1, 2, Some("half\0way")).await?;
                }
                "step-error-nul" => {
                    run.step("fails", async {
                        Err::<u64, _>(JobError::terminal("bad\0news"))
                    })
                    .await?;
                }
                other => panic!("no misuse named {other}"),
            }
            Ok(())
        })
    }
}

/// A client on a frozen clock at `t0`.
fn client(driver: Arc<dyn JobDriver>) -> Jobs {
    Jobs::with_clock(driver, Arc::new(TestClock::at(t0())))
}

/// `bytes` bytes of hex from random uuids: a value no compression shrinks.
fn entropy(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 32);
    while out.len() < bytes {
        out.push_str(&Uuid::new_v4().simple().to_string());
    }
    out.truncate(bytes);
    out
}

/// Every row of every queue, whatever its state.
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

/// Asserts a terminal refusal with `code` whose text names no part of `value`.
fn assert_limit<T: Debug>(what: &str, result: Result<T, JobError>, code: ErrorCode, value: &str) {
    let error = match result {
        Err(e) => e,
        Ok(v) => panic!("{what}: expected {}, got Ok({v:?})", code.as_str()),
    };
    assert_eq!(error.code(), Some(code), "{what}: {error}");
    assert_eq!(error.class(), ErrorClass::Terminal, "{what}: {error}");
    assert!(error.fix().is_some(), "{what}: a refusal names its fix");
    let probe: String = value.chars().take(16).collect();
    assert!(
        !error.to_string().contains(&probe),
        "{what}: the refusal echoes the value: {error}"
    );
}

/// A key, tenant, queue or job name over its limit is `X_LIMIT_EXCEEDED`, a low-entropy one
/// (which Postgres would compress into its index) as much as a random one, and no row is
/// written.
pub async fn limits_refuse_oversized_keys_tenants_queues_and_names_before_any_write(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let jobs = client(driver.clone());
    for key in [
        entropy(MAX_IDEMPOTENCY_KEY_BYTES + 1),
        "k".repeat(10_000),
        "é".repeat(MAX_IDEMPOTENCY_KEY_BYTES / 2 + 1),
    ] {
        let refused = jobs.enqueue::<Carrier>(parcel(&key)).await;
        assert_limit("key", refused, ErrorCode::LimitExceeded, &key);
    }
    for tenant in [entropy(MAX_TENANT_BYTES + 1), "t".repeat(10_000)] {
        let options = EnqueueOptions::new().tenant(Some(tenant.clone()));
        let refused = jobs.enqueue_with::<Carrier>(parcel("k"), options).await;
        assert_limit("tenant", refused, ErrorCode::LimitExceeded, &tenant);
    }
    let queue = "q".repeat(MAX_QUEUE_BYTES + 1);
    let options = EnqueueOptions::new().queue(queue.clone());
    let refused = jobs.enqueue_with::<Carrier>(parcel("k"), options).await;
    assert_limit("queue", refused, ErrorCode::LimitExceeded, &queue);
    let refused = jobs.enqueue::<OverlongName>(parcel("k")).await;
    assert_limit("job name", refused, ErrorCode::LimitExceeded, OVERLONG_NAME);
    let message = jobs
        .enqueue::<Carrier>(parcel(&"k".repeat(10_000)))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("10000 bytes") && message.contains("MAX_IDEMPOTENCY_KEY_BYTES"),
        "the refusal names the length and the limit: {message}"
    );
    assert_eq!(rows_total(d).await, 0, "a refusal writes no row");
}

/// A NUL in a key, tenant or queue is `X_VALUE_UNSTORABLE`; in the input (a string or a map
/// key), `X_JOB_INPUT_INVALID`. No row is written.
pub async fn limits_refuse_nul_in_keys_tenants_queues_and_inputs_before_any_write(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let jobs = client(driver.clone());
    let refused = jobs.enqueue::<Carrier>(parcel("secret\0key")).await;
    assert_limit("key", refused, ErrorCode::ValueUnstorable, "secret\0key");
    let options = EnqueueOptions::new().tenant(Some("secret\0tenant".into()));
    let refused = jobs.enqueue_with::<Carrier>(parcel("k"), options).await;
    assert_limit(
        "tenant",
        refused,
        ErrorCode::ValueUnstorable,
        "secret\0tenant",
    );
    let options = EnqueueOptions::new().queue("secret\0queue");
    let refused = jobs.enqueue_with::<Carrier>(parcel("k"), options).await;
    assert_limit(
        "queue",
        refused,
        ErrorCode::ValueUnstorable,
        "secret\0queue",
    );
    for body in [
        serde_json::json!({ "note": "secret\0input" }),
        serde_json::json!({ "deep": [[{ "secret\0input": 1 }]] }),
    ] {
        let input = Parcel {
            key: "k".into(),
            body,
        };
        let refused = jobs.enqueue::<Carrier>(input).await;
        assert_limit(
            "input",
            refused,
            ErrorCode::JobInputInvalid,
            "secret\0input",
        );
    }
    assert_eq!(rows_total(d).await, 0, "a refusal writes no row");
}

/// The largest values within the limits, random so that nothing compresses, are stored and
/// read back whole: the job name, tenant and key together fit the live-key index.
pub async fn limits_accept_every_value_at_its_limit(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let jobs = client(driver.clone());
    assert_eq!(LONGEST_NAME.len(), MAX_JOB_NAME_BYTES);
    assert_eq!(OVERLONG_NAME.len(), MAX_JOB_NAME_BYTES + 1);
    let key = entropy(MAX_IDEMPOTENCY_KEY_BYTES);
    let tenant = entropy(MAX_TENANT_BYTES);
    let queue = entropy(MAX_QUEUE_BYTES);
    let options = EnqueueOptions::new()
        .tenant(Some(tenant.clone()))
        .queue(queue.clone());
    let queued = jobs
        .enqueue_with::<LongestName>(parcel(&key), options.clone())
        .await
        .unwrap_or_else(|e| panic!("values at their limits are stored: {e}"));
    let row = get(d, queued.id).await;
    assert_eq!(row.name, LONGEST_NAME);
    assert_eq!(row.idempotency_key, key);
    assert_eq!(row.tenant_id.as_deref(), Some(tenant.as_str()));
    assert_eq!(row.queue, queue);
    let again = jobs
        .enqueue_with::<LongestName>(parcel(&key), options)
        .await
        .unwrap();
    assert!(again.deduped && again.id == queued.id, "and found by them");
    let wide = "é".repeat(MAX_IDEMPOTENCY_KEY_BYTES / 2);
    assert!(
        !jobs
            .enqueue::<Carrier>(parcel(&wide))
            .await
            .unwrap()
            .deduped
    );
}

/// One input over a limit refuses the whole `enqueue_many` batch: no job of it is written.
pub async fn limits_refuse_a_whole_enqueue_many_batch_for_one_bad_input(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let jobs = client(driver.clone());
    let long = "k".repeat(MAX_IDEMPOTENCY_KEY_BYTES + 1);
    let batch = vec![parcel("a"), parcel("b"), parcel(&long), parcel("c")];
    let refused = jobs.enqueue_many::<Carrier, _>(batch).await;
    assert_limit("batch", refused, ErrorCode::LimitExceeded, &long);
    let batch = vec![parcel("a"), parcel("b\0")];
    let refused = jobs.enqueue_many::<Carrier, _>(batch).await;
    assert_limit("batch", refused, ErrorCode::ValueUnstorable, "b\0");
    assert_eq!(
        rows_total(d).await,
        0,
        "no job of a refused batch is written"
    );
}

/// A priority outside -5..=5, from the enqueue's options, is `X_INVARIANT` (terminal, naming
/// the range as its fix) and writes nothing, alone or in a batch; the ends of the range are
/// stored as given.
pub async fn limits_refuse_a_priority_out_of_range_before_any_write(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let jobs = client(driver.clone());
    for priority in [MAX_PRIORITY + 1, MIN_PRIORITY - 1, i16::MAX, i16::MIN] {
        let refused = jobs
            .enqueue_with::<Carrier>(parcel("p"), EnqueueOptions::new().priority(priority))
            .await;
        let error = refused.expect_err("a priority out of range is refused");
        assert_eq!(
            error.code(),
            Some(ErrorCode::Invariant),
            "{priority}: {error}"
        );
        assert_eq!(error.class(), ErrorClass::Terminal, "{priority}: {error}");
        assert!(
            error
                .fix()
                .is_some_and(|fix| fix.contains("-5") && fix.contains('5')),
            "{priority}: the fix names the range: {error}"
        );
    }
    assert_eq!(rows_total(d).await, 0, "no refused enqueue is written");
    for (key, priority) in [("lowest", MIN_PRIORITY), ("highest", MAX_PRIORITY)] {
        let enqueued = jobs
            .enqueue_with::<Carrier>(parcel(key), EnqueueOptions::new().priority(priority))
            .await
            .unwrap_or_else(|e| panic!("{key}: {e}"));
        assert_eq!(get(d, enqueued.id).await.priority, priority);
    }
    let plain = jobs
        .enqueue::<Carrier>(parcel("plain"))
        .await
        .expect("enqueued");
    assert_eq!(get(d, plain.id).await.priority, DEFAULT_PRIORITY);
}

/// An event name or key over its limit is `X_LIMIT_EXCEEDED`, a NUL in either
/// `X_VALUE_UNSTORABLE`, a NUL in the payload `X_JOB_EVENT_INVALID`; none is stored.
pub async fn limits_refuse_event_names_keys_and_payloads_before_any_write(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let jobs = client(driver.clone());
    let mark = d.event_mark().await.unwrap();
    let since = EventSince { at: t0(), mark };
    let payload = serde_json::json!({ "amount": 1 });

    let name = "e".repeat(MAX_EVENT_NAME_BYTES + 1);
    let refused = jobs.publish_event(&name, "k", &payload).await;
    assert_limit("event name", refused, ErrorCode::LimitExceeded, &name);
    let key = entropy(MAX_EVENT_KEY_BYTES + 1);
    let refused = jobs.publish_event("e", &key, &payload).await;
    assert_limit("event key", refused, ErrorCode::LimitExceeded, &key);
    assert_eq!(
        d.event_find(&EventFindParams {
            name: "e",
            key: &key,
            since: &since,
            now: t0()
        })
        .await
        .unwrap(),
        None
    );
    let refused = jobs.publish_event("e", "secret\0key", &payload).await;
    assert_limit(
        "event key",
        refused,
        ErrorCode::ValueUnstorable,
        "secret\0key",
    );
    let refused = jobs.publish_event("secret\0name", "k", &payload).await;
    assert_limit(
        "event name",
        refused,
        ErrorCode::ValueUnstorable,
        "secret\0name",
    );
    let nul = serde_json::json!({ "note": "secret\0payload" });
    let refused = jobs.publish_event("e", "k", &nul).await;
    assert_limit(
        "payload",
        refused,
        ErrorCode::JobEventInvalid,
        "secret\0payload",
    );
    assert_eq!(
        d.event_find(&EventFindParams {
            name: "e",
            key: "k",
            since: &since,
            now: t0()
        })
        .await
        .unwrap(),
        None,
        "a refused publish stores nothing"
    );

    let longest_key = entropy(MAX_EVENT_KEY_BYTES);
    let longest_name = "e".repeat(MAX_EVENT_NAME_BYTES);
    jobs.publish_event(&longest_name, &longest_key, &payload)
        .await
        .unwrap_or_else(|e| panic!("an event at its limits is stored: {e}"));
    let found = d
        .event_find(&EventFindParams {
            name: &longest_name,
            key: &longest_key,
            since: &since,
            now: t0(),
        })
        .await
        .unwrap()
        .expect("found by its name and key");
    assert_eq!(found.payload, payload);
}

/// Inside a run: a step name over its limit or holding a NUL, a step output holding a NUL, a
/// wait's name or key over its limit, a progress note holding a NUL each dead-letter the run on
/// its first attempt with their code, and write no step record.
pub async fn limits_refuse_step_names_outputs_waits_and_notes_without_writing_a_step(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let jobs = client(driver.clone());
    let mut registry = Registry::new();
    registry.register::<Misuse>().expect("one job");
    let worker = jobs
        .worker()
        .registry(registry)
        .queues([QUEUE])
        .build()
        .expect("the worker builds");
    let cases = [
        ("step-name-long", ErrorCode::LimitExceeded),
        ("step-name-nul", ErrorCode::ValueUnstorable),
        ("step-output-nul", ErrorCode::StepOutputUnserializable),
        ("wait-name-long", ErrorCode::LimitExceeded),
        ("wait-key-long", ErrorCode::LimitExceeded),
        ("progress-note-nul", ErrorCode::ValueUnstorable),
    ];
    for (misuse, code) in cases {
        let queued = jobs.enqueue::<Misuse>(subject(misuse)).await.unwrap();
        let pass = tick(&worker).await;
        assert_eq!(pass.len(), 1, "{misuse}");
        assert_eq!(pass[0].outcome, ExecutionOutcome::DeadLettered, "{misuse}");
        assert_eq!(pass[0].code, Some(code), "{misuse}: {:?}", pass[0].error);
        let row = get(d, queued.id).await;
        assert_eq!(row.state, JobState::Dead, "{misuse}");
        assert_eq!(row.attempt, 1, "{misuse}: terminal, not retried");
        assert_eq!(row.last_error_code.as_deref(), Some(code.as_str()));
        assert_eq!(
            d.step_list(&StepListParams {
                run_id: queued.run_id
            })
            .await
            .unwrap(),
            Vec::new(),
            "{misuse}: no step record was written"
        );
        assert_eq!(row.progress, None, "{misuse}");
    }
}

/// An error message holding a NUL is stored, its NUL replaced (text cannot hold one): on the
/// failed step record and as the job's last error.
pub async fn limits_store_an_error_message_holding_nul(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let jobs = client(driver.clone());
    let mut registry = Registry::new();
    registry.register::<Misuse>().expect("one job");
    let worker = jobs
        .worker()
        .registry(registry)
        .queues([QUEUE])
        .build()
        .expect("the worker builds");
    let queued = jobs
        .enqueue::<Misuse>(subject("step-error-nul"))
        .await
        .unwrap();
    let pass = tick(&worker).await;
    assert_eq!(pass[0].outcome, ExecutionOutcome::DeadLettered);
    let row = get(d, queued.id).await;
    assert_eq!(row.state, JobState::Dead);
    let last_error = row.last_error.unwrap_or_default();
    assert!(last_error.contains("bad\u{FFFD}news"), "{last_error}");
    let steps = d
        .step_list(&StepListParams {
            run_id: queued.run_id,
        })
        .await
        .unwrap();
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].status, StepStatus::Failed);
    assert_eq!(steps[0].error.as_deref(), Some("bad\u{FFFD}news"));
}

/// A `with_lock` key over its limit, or holding a NUL, is refused before the lease store is
/// asked.
pub async fn limits_refuse_a_lock_key_over_its_limit(driver: Arc<dyn JobDriver>) {
    let jobs = client(driver.clone());
    let options = LockOptions::ttl(Duration::from_secs(30));
    let key = entropy(MAX_LOCK_KEY_BYTES + 1);
    let refused = jobs.with_lock(&key, options, |_| async { Ok(()) }).await;
    assert_limit("lock key", refused, ErrorCode::LimitExceeded, &key);
    let refused = jobs
        .with_lock("secret\0lock", options, |_| async { Ok(()) })
        .await;
    assert_limit(
        "lock key",
        refused,
        ErrorCode::ValueUnstorable,
        "secret\0lock",
    );
    if let Some(store) = driver.lease_store() {
        let held = store
            .lease_holders(&LeaseHoldersParams {
                key: &format!("lock:{key}"),
                now: t0(),
            })
            .await
            .unwrap();
        assert!(held.is_empty(), "nothing was acquired");
    }
    if driver.lease_store().is_some() {
        let key = entropy(MAX_LOCK_KEY_BYTES);
        jobs.with_lock(&key, options, |_| async { Ok(()) })
            .await
            .unwrap_or_else(|e| panic!("a lock key at its limit is held: {e}"));
    }
}
