//! Event waits: `wait_for_event` parks the run, `publish_event` under the right key wakes it
//! with a typed payload, the wait's own line excludes older events, and the timeout answers
//! `None`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use jobs::driver::StepStatus;
use jobs::prelude::*;
use jobs::testing::TestKit;
use jobs::ExecutionOutcome;

use crate::support::time::elapsed;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Paid {
    amount: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Invoice {
    invoice: String,
}

/// What each run's wait answered, by invoice.
static ANSWERS: Mutex<Option<HashMap<String, Option<Paid>>>> = Mutex::new(None);

fn answer(invoice: &str) -> Option<Option<Paid>> {
    ANSWERS
        .lock()
        .unwrap()
        .as_ref()
        .and_then(|m| m.get(invoice).cloned())
}

#[job(key = "await:{invoice}", tenant = none)]
async fn await_payment(run: Run, input: Invoice) -> Result<Option<u64>, JobError> {
    let paid: Option<Paid> = run
        .wait_for_event("invoice.paid", &input.invoice, "1h")
        .await?;
    ANSWERS
        .lock()
        .unwrap()
        .get_or_insert_with(HashMap::new)
        .insert(input.invoice.clone(), paid.clone());
    Ok(paid.map(|p| p.amount))
}

fn invoice(name: &str) -> Invoice {
    Invoice {
        invoice: name.into(),
    }
}

#[tokio::test]
async fn a_wait_suspends_and_a_publish_under_its_key_wakes_it() {
    let kit = TestKit::new();
    let start = kit.jobs().now();
    let queued = AwaitPayment::enqueue(kit.jobs(), invoice("inv-1"))
        .await
        .unwrap();

    let executions = kit.run_until_idle().await;
    assert_eq!(executions[0].outcome, ExecutionOutcome::Suspended);
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Suspended);
    assert_eq!(row.attempt, 0);
    // Parked until the next poll (30 s by default), well before the 1 h timeout.
    assert_eq!(elapsed(start, row.run_at), Duration::from_secs(30));
    let steps = kit.steps(queued.run_id).await;
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].name, "wait:invoice.paid");
    assert_eq!(steps[0].status, StepStatus::Waiting);

    // Another key, or another event name, wakes nothing.
    kit.jobs()
        .publish_event("invoice.paid", "inv-other", &Paid { amount: 1 })
        .await
        .unwrap();
    kit.jobs()
        .publish_event("invoice.voided", "inv-1", &Paid { amount: 1 })
        .await
        .unwrap();
    assert_eq!(kit.job(queued.id).await.run_at, row.run_at);
    assert!(kit.run_until_idle().await.is_empty());
    assert_eq!(kit.job(queued.id).await.state, JobState::Suspended);

    kit.jobs()
        .publish_event("invoice.paid", "inv-1", &Paid { amount: 42 })
        .await
        .unwrap();
    let woken = kit.job(queued.id).await;
    assert_eq!(woken.state, JobState::Suspended);
    assert_eq!(
        woken.run_at,
        kit.jobs().now(),
        "the publish makes it due now"
    );

    let executions = kit.run_until_idle().await;
    assert_eq!(executions.len(), 1);
    assert_eq!(executions[0].outcome, ExecutionOutcome::Completed);
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
    assert_eq!(answer("inv-1"), Some(Some(Paid { amount: 42 })));
    assert_eq!(kit.jobs().now(), start, "no time had to pass");
    let steps = kit.steps(queued.run_id).await;
    assert_eq!(steps[0].status, StepStatus::Completed);
    assert_eq!(steps[0].output, Some(serde_json::json!({ "amount": 42 })));
}

#[tokio::test]
async fn an_event_published_before_the_wait_began_is_not_its_own() {
    let kit = TestKit::new();
    kit.jobs()
        .publish_event("invoice.paid", "inv-2", &Paid { amount: 1 })
        .await
        .unwrap();
    let queued = AwaitPayment::enqueue(kit.jobs(), invoice("inv-2"))
        .await
        .unwrap();
    kit.run_until_idle().await;
    assert_eq!(kit.job(queued.id).await.state, JobState::Suspended);

    // Still unmatched at the next poll.
    kit.advance(Duration::from_secs(30));
    let executions = kit.run_until_idle().await;
    assert_eq!(executions.len(), 1);
    assert_eq!(executions[0].outcome, ExecutionOutcome::Suspended);
    assert_eq!(answer("inv-2"), None);

    kit.jobs()
        .publish_event("invoice.paid", "inv-2", &Paid { amount: 7 })
        .await
        .unwrap();
    kit.run_until_idle().await;
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
    assert_eq!(answer("inv-2"), Some(Some(Paid { amount: 7 })));
}

#[tokio::test]
async fn a_wait_times_out_with_none() {
    let kit = TestKit::new();
    let start = kit.jobs().now();
    let queued = AwaitPayment::enqueue(kit.jobs(), invoice("inv-3"))
        .await
        .unwrap();
    let executions = kit.run_to_completion().await;
    assert_eq!(
        executions.last().unwrap().outcome,
        ExecutionOutcome::Completed
    );
    assert!(executions[..executions.len() - 1]
        .iter()
        .all(|e| e.outcome == ExecutionOutcome::Suspended));
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Done);
    assert_eq!(row.attempt, 1, "the polls spent no attempt");
    assert_eq!(answer("inv-3"), Some(None));
    assert_eq!(elapsed(start, kit.jobs().now()), Duration::from_secs(3600));

    // An event after the timeout changes nothing.
    kit.jobs()
        .publish_event("invoice.paid", "inv-3", &Paid { amount: 9 })
        .await
        .unwrap();
    assert!(kit.run_until_idle().await.is_empty());
    assert_eq!(answer("inv-3"), Some(None));
}

#[tokio::test]
async fn a_payload_of_the_wrong_type_is_terminal() {
    let kit = TestKit::new();
    let queued = AwaitPayment::enqueue(kit.jobs(), invoice("inv-4"))
        .await
        .unwrap();
    kit.run_until_idle().await;
    kit.jobs()
        .publish_event(
            "invoice.paid",
            "inv-4",
            &serde_json::json!({ "amount": "a-secret-amount" }),
        )
        .await
        .unwrap();
    let executions = kit.run_until_idle().await;
    assert_eq!(executions.len(), 1);
    assert_eq!(executions[0].outcome, ExecutionOutcome::DeadLettered);
    assert_eq!(executions[0].code, Some(ErrorCode::JobEventInvalid));
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Dead);
    assert_eq!(row.attempt, 1);
    assert_eq!(row.last_error_code.as_deref(), Some("X_JOB_EVENT_INVALID"));
    let last_error = row.last_error.unwrap();
    assert!(
        !last_error.contains("a-secret-amount"),
        "the error carries the issue, never the payload: {last_error}"
    );
    assert_eq!(answer("inv-4"), None);
}
