// An expression key, `tenant = none`, every retry option, a debounce with a unique period,
// keyed concurrency and on_settled.
#![deny(warnings)]
use std::time::Duration;

use jobs::prelude::*;
use jobs::{Backoff, Concurrency, Jitter, TenantMode, WhenBusy};

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Order {
    pub order_id: String,
    pub account: Account,
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Account {
    pub id: u64,
}

#[derive(Debug)]
pub struct Receipt {
    pub amount: u64,
}

#[job(
    key = |order: &Order| format!("charge:{}", order.order_id),
    tenant = none,
    retry(attempts = 5, backoff = exponential, delay = "1s", max_delay = "1h", jitter = equal),
    dead_letter = false,
    timeout = "10m",
    step_timeout = "30s",
    event_poll = "1h 30m",
    expires_in = "15m",
    debounce = "2s",
    unique(for = "1h"),
    concurrency(key = "account:{account.id}", limit = 1, when_busy = fail),
    on_settled = charge_settled,
)]
pub async fn charge(run: Run, input: Order) -> Result<Receipt, JobError> {
    let amount = run
        .step("charge", async { Ok::<_, JobError>(42u64) })
        .await?;
    let _ = &input.order_id;
    Ok(Receipt { amount })
}

async fn charge_settled(settled: Settled<Order, Receipt>) -> Result<(), JobError> {
    let _amount = settled.result.map(|receipt| receipt.amount);
    Ok(())
}

#[test]
fn runs() {
    let input = Order {
        order_id: "o-1".into(),
        account: Account { id: 9 },
    };
    assert_eq!(Charge::idempotency_key(&input), "charge:o-1");
    assert_eq!(Charge::tenant(&input), None);
    assert_eq!(
        Charge::concurrency_key(&input).as_deref(),
        Some("account:9")
    );

    let d = Charge::descriptor();
    assert_eq!(d.name, "charge");
    assert_eq!(d.tenant, TenantMode::None);
    assert_eq!(d.retry.attempts, 5);
    assert_eq!(d.retry.backoff, Backoff::Exponential);
    assert_eq!(d.retry.delay, Duration::from_secs(1));
    assert_eq!(d.retry.max_delay, Duration::from_secs(3600));
    assert_eq!(d.retry.jitter, Jitter::Equal);
    assert!(!d.dead_letter);
    assert_eq!(d.timeout, Some(Duration::from_secs(600)));
    assert_eq!(d.step_timeout, Some(Duration::from_secs(30)));
    assert_eq!(d.event_poll, Duration::from_secs(5400));
    assert_eq!(d.expires_in, Some(Duration::from_secs(900)));
    assert_eq!(d.debounce, Some(Duration::from_secs(2)));
    assert_eq!(d.unique_for, Some(Duration::from_secs(3600)));
    assert_eq!(
        d.concurrency,
        Some(Concurrency {
            limit: 1,
            keyed: true,
            when_busy: WhenBusy::Fail
        })
    );
    assert!(d.on_settled);
}
