// `name`, `handle`, every catch-up policy in both spellings, and the occurrence by reference.
#![deny(warnings)]
use jobs::clock::Timestamp;
use jobs::prelude::*;
use jobs::{CatchUp, Task};

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct RollupAt {
    pub at_ms: i64,
}

#[job(key = "rollup:{at_ms}", tenant = none)]
pub async fn rollup(_run: Run, _input: RollupAt) -> Result<(), JobError> {
    Ok(())
}

#[task(
    name = "nightly",
    cron = "30 1 * * *",
    tz = "America/Bogota",
    catch_up = run_all,
    max_catch_up = 5,
    handle = NightlyRollup,
)]
fn nightly_rollup(at: &Occurrence) -> Vec<Entry> {
    vec![Entry::of::<Rollup>(RollupAt {
        at_ms: at.timestamp_millis(),
    })]
}

#[task(cron = "*/15 * * * *", tz = "UTC", catch_up = "run-once")]
fn quarter_hourly(_at: Occurrence) -> Vec<Entry> {
    vec![]
}

#[task(
    cron = "0 0 * * 0",
    tz = "Asia/Tokyo",
    catch_up = "run-all",
    max_catch_up = 1
)]
fn sundays(_at: &Occurrence) -> Vec<Entry> {
    Vec::new()
}

#[task(cron = "0 12 1,15 jan-jun mon-fri", tz = "Australia/Sydney", catch_up = skip)]
fn mid_month(_at: Occurrence) -> Vec<Entry> {
    Vec::new()
}

#[test]
fn runs() {
    let d = NightlyRollup::descriptor();
    assert_eq!(d.name, "nightly");
    assert_eq!(d.cron, "30 1 * * *");
    assert_eq!(d.tz, "America/Bogota");
    assert_eq!(d.catch_up, CatchUp::RunAll);
    assert_eq!(d.max_catch_up, 5);

    let at = Occurrence::new(
        Timestamp::from_timestamp_millis(1_894_003_200_000).unwrap(),
        "America/Bogota".parse().unwrap(),
    );
    let entries = NightlyRollup::entries(&at);
    assert_eq!(entries[0].job_name(), "rollup");
    assert_eq!(entries[0].idempotency_key(), Some("rollup:1894003200000"));

    assert_eq!(QuarterHourly::descriptor().catch_up, CatchUp::RunOnce);
    assert_eq!(QuarterHourly::descriptor().max_catch_up, 10);
    assert!(QuarterHourly::entries(&at).is_empty());

    assert_eq!(Sundays::descriptor().catch_up, CatchUp::RunAll);
    assert_eq!(Sundays::descriptor().max_catch_up, 1);
    assert_eq!(Sundays::descriptor().tz, "Asia/Tokyo");

    assert_eq!(MidMonth::descriptor().catch_up, CatchUp::Skip);
    assert_eq!(MidMonth::descriptor().cron, "0 12 1,15 jan-jun mon-fri");
}
