//! The leading scheduler rolls the operator counters up a tier about once a minute.

use std::time::Duration;

use jobs::driver::introspect::CountersParams;
use jobs::prelude::*;
use jobs::testing::TestKit;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Ping {
    n: u32,
}

#[job(key = "ping:{n}", tenant = none)]
async fn ping_job(_run: Run, _input: Ping) -> Result<(), JobError> {
    Ok(())
}

#[tokio::test]
async fn the_leader_folds_a_day_old_minute_counters_into_five_minute_buckets() {
    let kit = TestKit::new();
    let since = kit.jobs().now();
    for n in 0..2 {
        kit.advance(Duration::from_secs(60));
        kit.enqueue::<PingJob>(Ping { n }).await;
        kit.run_until_idle().await;
    }
    let introspect = kit
        .jobs()
        .driver()
        .introspect()
        .expect("the memory driver has one");
    let before = introspect
        .counters(&CountersParams {
            name: "ping_job",
            since,
        })
        .await
        .unwrap();
    assert_eq!(before.len(), 2, "one minute bucket per completion");

    let scheduler = kit.jobs().scheduler().build().unwrap();
    kit.advance(Duration::from_secs(25 * 3600));
    assert!(scheduler.tick().await.unwrap().leading);
    let after = introspect
        .counters(&CountersParams {
            name: "ping_job",
            since,
        })
        .await
        .unwrap();
    assert_eq!(after.len(), 1, "folded: {after:?}");
    assert_eq!(after[0].width_secs, 300);
    assert_eq!(after[0].done, 2);
}
