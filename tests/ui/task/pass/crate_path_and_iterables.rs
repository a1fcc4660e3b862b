// The runtime reached through another path (`crate = ".."`; this file is the module
// `task_crate_path_and_iterables` of tests/ui/pass.rs), a private task never named by
// the caller, and entries answered as any iterable of `Entry` (an array, an `Option`).
#![deny(warnings)]
use jobs::clock::Timestamp;
use jobs::prelude::*;
use jobs::Task;

mod facade {
    pub use ::jobs;
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct PingAt {
    pub minute: u32,
}

#[job(key = "ping:{minute}", tenant = none)]
pub async fn ping(_run: Run, _input: PingAt) -> Result<(), JobError> {
    Ok(())
}

#[task(
    cron = "* * * * *",
    tz = "UTC",
    crate = "crate::task_crate_path_and_iterables::facade::jobs"
)]
pub fn every_minute(at: Occurrence) -> [Entry; 2] {
    let minute = at.at().timestamp() as u32 / 60 % 60;
    [
        Entry::of::<Ping>(PingAt { minute }),
        Entry::of::<Ping>(PingAt {
            minute: minute + 60,
        }),
    ]
}

// Never named below: the registry still sees it, and nothing warns.
#[task(cron = "0 * * * *", tz = "Europe/London")]
fn hourly_maybe(at: Occurrence) -> Option<Entry> {
    (at.local().format("%H").to_string() == "00").then(|| Entry::of::<Ping>(PingAt { minute: 0 }))
}

#[test]
fn runs() {
    let at = Occurrence::new(
        Timestamp::from_timestamp_millis(1_894_003_260_000).unwrap(),
        "UTC".parse().unwrap(),
    );
    let entries = EveryMinute::entries(&at);
    let keys: Vec<_> = entries.iter().map(|e| e.idempotency_key()).collect();
    assert_eq!(keys, [Some("ping:1"), Some("ping:61")]);
    assert_eq!(EveryMinute::descriptor().cron, "* * * * *");
    let next = EveryMinute::next_run(at.at()).unwrap();
    assert_eq!(next.timestamp_millis(), 1_894_003_320_000);
    assert_eq!(
        <EveryMinute as jobs::Task>::DESCRIPTOR.tz,
        facade::jobs::TaskDescriptor::new("x", "* * * * *", "UTC").tz
    );
}
