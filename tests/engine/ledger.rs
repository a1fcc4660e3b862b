//! `#[ledger]` on the memory driver: balanced postings written once through the driver's book
//! (and an app's own book), refusals before a line is written, idempotency by key per tenant,
//! conflicts that write nothing, and the compile-time checked `posting!`.

use std::sync::{Arc, OnceLock};

use jobs::driver::JobDriver;
use jobs::ledger::{
    assert_balanced_posting, LedgerBook, LedgerLine, MemoryBook, PostingLinesParams,
};
use jobs::prelude::*;
use jobs::testing::TestKit;

#[ledger(name = "payments", tenant = per_tenant, book = driver)]
pub struct PostPayment;

#[ledger(name = "treasury", tenant = none, book = treasury_book, retry(attempts = 5))]
pub struct PostTreasury;

static TREASURY: OnceLock<Arc<MemoryBook>> = OnceLock::new();

fn treasury() -> Arc<MemoryBook> {
    TREASURY.get_or_init(|| Arc::new(MemoryBook::new())).clone()
}

fn treasury_book(_run: &Run) -> Result<Arc<dyn LedgerBook>, JobError> {
    Ok(treasury())
}

fn payment(key: &str, tenant: &str, amount: i64) -> Posting {
    posting!(key, [
        "assets:cash" => (amount) EUR,
        "income:sales" => (-amount) EUR,
    ])
    .for_tenant(tenant)
}

async fn lines(kit: &TestKit, tenant: Option<&str>, key: &str) -> Vec<LedgerLine> {
    kit.driver()
        .ledger_book()
        .unwrap()
        .posting_lines(&PostingLinesParams {
            ledger: "payments".into(),
            tenant: tenant.map(str::to_string),
            key: key.into(),
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn a_balanced_posting_is_written_in_one_step() {
    let kit = TestKit::new();
    let queued = PostPayment::enqueue(kit.jobs(), payment("pay_1", "acme", 1_250))
        .await
        .unwrap();
    kit.run_to_completion().await;
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
    let stored = lines(&kit, Some("acme"), "pay_1").await;
    assert_eq!(stored.len(), 2);
    assert_eq!((stored[0].line, stored[0].minor), (0, 1_250));
    assert_eq!(
        (stored[1].account.as_str(), stored[1].minor),
        ("income:sales", -1_250)
    );
    let steps = kit.steps(queued.run_id).await;
    assert_eq!(steps.len(), 1, "every line in one durable step");
    assert_eq!(steps[0].name, "post");
    assert_eq!(steps[0].output, Some(serde_json::json!("written")));
}

#[tokio::test]
async fn a_key_is_posted_once_per_tenant() {
    let kit = TestKit::new();
    let first = PostPayment::enqueue(kit.jobs(), payment("pay_2", "acme", 500))
        .await
        .unwrap();
    // A second enqueue while the first is live is the same job.
    let dup = PostPayment::enqueue(kit.jobs(), payment("pay_2", "acme", 500))
        .await
        .unwrap();
    assert!(dup.deduped && dup.id == first.id);
    kit.run_to_completion().await;

    // After it finished: a new job, which finds the lines already posted and writes nothing.
    let again = PostPayment::enqueue(kit.jobs(), payment("pay_2", "acme", 500))
        .await
        .unwrap();
    kit.run_to_completion().await;
    assert_eq!(kit.job(again.id).await.state, JobState::Done);
    let steps = kit.steps(again.run_id).await;
    assert_eq!(steps[0].output, Some(serde_json::json!("already_posted")));
    assert_eq!(lines(&kit, Some("acme"), "pay_2").await.len(), 2);

    // The same key under another tenant is another posting.
    PostPayment::enqueue(kit.jobs(), payment("pay_2", "globex", 700))
        .await
        .unwrap();
    kit.run_to_completion().await;
    assert_eq!(lines(&kit, Some("globex"), "pay_2").await[0].minor, 700);
    assert_eq!(lines(&kit, Some("acme"), "pay_2").await[0].minor, 500);
}

#[tokio::test]
async fn the_same_key_with_other_lines_is_a_conflict_that_writes_nothing() {
    let kit = TestKit::new();
    PostPayment::enqueue(kit.jobs(), payment("pay_3", "acme", 100))
        .await
        .unwrap();
    kit.run_to_completion().await;
    let other = PostPayment::enqueue(kit.jobs(), payment("pay_3", "acme", 999))
        .await
        .unwrap();
    kit.run_to_completion().await;
    let job = kit.job(other.id).await;
    assert_eq!(job.state, JobState::Dead);
    assert_eq!(job.attempt, 1, "terminal: no retry");
    assert_eq!(
        job.last_error_code.as_deref(),
        Some("X_LEDGER_POSTING_CONFLICT")
    );
    let error = job.last_error.unwrap();
    assert!(
        !error.contains("pay_3") && !error.contains("999"),
        "{error}"
    );
    let stored = lines(&kit, Some("acme"), "pay_3").await;
    assert_eq!(stored[0].minor, 100, "the stored posting is untouched");
}

#[tokio::test]
async fn unbalanced_and_malformed_postings_are_refused_before_a_line_is_written() {
    let kit = TestKit::new();
    let lopsided = Posting::new(
        "pay_4",
        vec![
            PostingEntry::new("assets:cash", Money::new(1_000, "EUR")),
            PostingEntry::new("income:sales", Money::new(-999, "EUR")),
        ],
    )
    .for_tenant("acme");
    // The handle refuses at the call, before enqueueing ...
    let refused = PostPayment::enqueue(kit.jobs(), lopsided.clone())
        .await
        .unwrap_err();
    assert!(refused.is(ErrorCode::LedgerUnbalanced), "{refused}");
    assert_eq!(kit.driver().live_count(), 0);

    // ... and a raw enqueue is refused by the run, for good, with nothing written.
    let raw = kit.jobs().enqueue::<PostPayment>(lopsided).await.unwrap();
    let one_entry = Posting::new(
        "pay_5",
        vec![PostingEntry::new("assets:cash", Money::new(0, "EUR"))],
    )
    .for_tenant("acme");
    let malformed = kit.jobs().enqueue::<PostPayment>(one_entry).await.unwrap();
    let untenanted = kit
        .jobs()
        .enqueue::<PostPayment>(Posting::new(
            "pay_6",
            vec![
                PostingEntry::new("a", Money::new(1, "EUR")),
                PostingEntry::new("b", Money::new(-1, "EUR")),
            ],
        ))
        .await
        .unwrap();
    kit.run_to_completion().await;
    for (id, code) in [
        (raw.id, "X_LEDGER_UNBALANCED"),
        (malformed.id, "X_LEDGER_ENTRY_INVALID"),
        (untenanted.id, "X_JOB_TENANT_REQUIRED"),
    ] {
        let job = kit.job(id).await;
        assert_eq!(job.state, JobState::Dead, "{code}");
        assert_eq!(job.attempt, 1, "{code} is terminal");
        assert_eq!(job.last_error_code.as_deref(), Some(code));
        assert!(kit.steps(job.run_id).await.is_empty(), "no step, no line");
    }
    assert!(lines(&kit, Some("acme"), "pay_4").await.is_empty());
}

#[tokio::test]
async fn an_app_book_and_fx_postings_balanced_per_currency() {
    let kit = TestKit::new();
    let fx = posting!("fx_1", [
        "eur:cash" => -1_000 EUR,
        "eur:fx" => 1_000 EUR,
        "usd:fx" => -1_080 USD,
        "usd:cash" => 1_080 USD,
    ]);
    assert!(assert_balanced_posting(&fx).is_ok());
    let queued = PostTreasury::enqueue(kit.jobs(), fx).await.unwrap();
    kit.run_to_completion().await;
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
    let stored = treasury()
        .posting_lines(&PostingLinesParams {
            ledger: "treasury".into(),
            tenant: None,
            key: "fx_1".into(),
        })
        .await
        .unwrap();
    assert_eq!(stored.len(), 4);
    assert_eq!(stored[2].currency, "USD");
    assert!(
        lines(&kit, None, "fx_1").await.is_empty(),
        "not the driver's book"
    );
    // An FX posting that balances overall but not per currency is refused.
    let skewed = posting!("fx_2", [
        "eur:cash" => (-1_000) EUR,
        "usd:cash" => (1_000) USD,
    ]);
    assert!(assert_balanced_posting(&skewed)
        .unwrap_err()
        .is(ErrorCode::LedgerUnbalanced));
}

#[test]
fn the_manifest_shows_ledgers_with_their_kind_and_fields() {
    let manifest = jobs::manifest().unwrap();
    let row = manifest
        .jobs()
        .iter()
        .find(|j| j["name"] == "payments")
        .unwrap();
    assert_eq!(row["kind"], "ledger");
    assert_eq!(row["ledger"]["book"], "driver");
    assert_eq!(row["ledger"]["tenant"], "per_tenant");
    assert_eq!(row["input"]["type"], "Posting");
    let treasury = manifest
        .jobs()
        .iter()
        .find(|j| j["name"] == "treasury")
        .unwrap();
    assert_eq!(treasury["ledger"]["book"], "treasury_book");
    assert_eq!(treasury["retry"]["attempts"], 5);
}
