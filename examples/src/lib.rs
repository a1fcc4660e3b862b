//! Example jobs of a small SaaS app, declared once and linked into the `manifest` binary, so
//! `cargo run --bin manifest` prints what they declare. The quickstart (`examples/quickstart.rs`)
//! declares its own jobs and runs them.

pub mod outside_driver;

use jobs::prelude::*;
use uuid::Uuid;

/// Onboards a new organisation.
#[input]
#[derive(Debug, Clone)]
pub struct Onboard {
    /// The organisation.
    pub org_id: Uuid,
    /// Where the welcome mail goes.
    pub email: String,
}

/// An invoice the billing provider reported paid.
#[input]
#[derive(Debug, Clone)]
pub struct InvoicePaid {
    /// The provider's invoice id.
    pub invoice_id: String,
    /// Amount in minor units.
    pub amount_minor: i64,
}

/// Provisions the org, sends the welcome mail, waits three days, then waits up to a week for
/// the first invoice to be paid before deciding which follow-up to send.
#[job(
    key = "onboard:{org_id}",
    tenant = org_id,
    queue = "onboarding",
    retry(attempts = 5, backoff = exponential, delay = "1s", max_delay = "1h"),
    timeout = "10m",
    step_timeout = "30s",
)]
pub async fn onboard_org(run: Run, input: Onboard) -> Result<bool, JobError> {
    let account: String = run
        .step("provision", async {
            Ok::<_, JobError>(format!("acct-{}", input.org_id))
        })
        .await?;
    run.step("welcome-email", async { Ok::<_, JobError>(()) })
        .await?;
    run.sleep("3d").await?;
    let paid: Option<InvoicePaid> = run.wait_for_event("invoice.paid", &account, "7d").await?;
    run.step("follow-up", async { Ok::<_, JobError>(()) })
        .await?;
    Ok(paid.is_some())
}

/// Charges a card for an order.
#[input]
#[derive(Debug, Clone)]
pub struct Order {
    /// The organisation.
    pub org_id: Uuid,
    /// The order.
    pub order_id: u64,
    /// Amount in minor units.
    pub amount_minor: i64,
}

/// Charges a card; a decline is terminal, a throttle is retried when the provider says. At
/// most 100 charges a minute per organisation, across every worker (the provider's quota).
#[job(
    name = "billing.charge",
    key = "charge:{order_id}",
    tenant = org_id,
    queue = "billing",
    retry(attempts = 8, backoff = exponential, delay = "2s", max_delay = "10m", jitter = full),
    rate(limit = 100, per = "1m", key = "{org_id}"),
    on_settled = charge_settled,
)]
pub async fn charge_order(run: Run, input: Order) -> Result<String, JobError> {
    if input.amount_minor <= 0 {
        return Err(JobError::terminal("an order must charge a positive amount"));
    }
    run.step("charge", async move {
        Ok::<_, JobError>(format!("ch_{}", input.order_id))
    })
    .await
}

/// Told once per ending of `billing.charge`.
pub async fn charge_settled(settled: Settled<Order, String>) -> Result<(), JobError> {
    if settled.outcome != Outcome::Completed {
        println!(
            "charge {} ended {}",
            settled.job_id,
            settled.outcome.as_str()
        );
    }
    Ok(())
}

/// A nightly digest with no tenant.
#[input]
#[derive(Debug, Clone)]
pub struct Digest {
    /// The day, `YYYY-MM-DD`.
    pub day: String,
}

/// Builds the nightly digest; a failure is dropped, not dead-lettered (tomorrow's replaces it).
/// Keeps its result, the number of entries, for whoever reads the day's digest later.
#[job(key = |d: &Digest| format!("digest:{}", d.day), tenant = none, queue = "reports", dead_letter = false, retry(attempts = 2, backoff = fixed, delay = "5m", jitter = none), keep_result)]
pub async fn nightly_digest(_run: Run, input: Digest) -> Result<usize, JobError> {
    Ok(input.day.len())
}
