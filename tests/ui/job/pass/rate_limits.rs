// A fleet-wide rate, plain and per key (a template or a closure), beside a concurrency cap.
#![deny(warnings)]
use std::time::Duration;

use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Payment {
    pub charge_id: u64,
    pub customer_id: String,
}

#[job(key = "charge:{charge_id}", tenant = customer_id, rate(limit = 100, per = "1m"))]
pub async fn charge_plain(run: Run, input: Payment) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

#[job(
    key = "charge:{charge_id}",
    tenant = customer_id,
    concurrency = 4,
    rate(limit = 5, per = "1s", key = "{customer_id}"),
)]
pub async fn charge_per_customer(run: Run, input: Payment) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

#[job(
    key = "charge:{charge_id}",
    tenant = none,
    rate(key = |c: &Payment| c.customer_id.to_uppercase(), per = "1h 30m", limit = 1),
)]
pub async fn charge_by_closure(run: Run, input: Payment) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

#[test]
fn runs() {
    let input = Payment {
        charge_id: 7,
        customer_id: "acme".into(),
    };
    let rate = ChargePlain::descriptor().rate.expect("declared");
    assert_eq!(
        (rate.limit, rate.per, rate.keyed),
        (100, Duration::from_secs(60), false)
    );
    assert_eq!(ChargePlain::rate_key(&input), None);

    let d = ChargePerCustomer::descriptor();
    let rate = d.rate.expect("declared");
    assert_eq!(
        (rate.limit, rate.per, rate.keyed),
        (5, Duration::from_secs(1), true)
    );
    assert_eq!(d.concurrency.map(|c| c.limit), Some(4));
    assert_eq!(ChargePerCustomer::rate_key(&input).as_deref(), Some("acme"));
    assert_eq!(ChargePerCustomer::concurrency_key(&input), None);

    let rate = ChargeByClosure::descriptor().rate.expect("declared");
    assert_eq!((rate.limit, rate.per), (1, Duration::from_secs(5400)));
    assert_eq!(ChargeByClosure::rate_key(&input).as_deref(), Some("ACME"));
}
