// The defaults: a weekday cron in Paris, the occurrence taken by value, entries built from it.
#![deny(warnings)]
use jobs::clock::Timestamp;
use jobs::prelude::*;
use jobs::{CatchUp, Task, TaskEntry, DEFAULT_MAX_CATCH_UP};

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Digest {
    pub day: String,
}

#[job(key = "digest:{day}", tenant = none)]
pub async fn send_digest(_run: Run, _input: Digest) -> Result<(), JobError> {
    Ok(())
}

/// Sends the digest every weekday morning.
#[task(cron = "0 9 * * 1-5", tz = "Europe/Paris")]
pub fn weekday_digest(at: Occurrence) -> Vec<Entry> {
    vec![Entry::of::<SendDigest>(Digest {
        day: at.date().to_string(),
    })]
}

#[test]
fn runs() {
    let d = WeekdayDigest::descriptor();
    assert_eq!(d.name, "weekday_digest");
    assert_eq!(d.cron, "0 9 * * 1-5");
    assert_eq!(d.tz, "Europe/Paris");
    assert_eq!(d.catch_up, CatchUp::Skip);
    assert_eq!(d.max_catch_up, DEFAULT_MAX_CATCH_UP);
    assert_eq!(<WeekdayDigest as Task>::DESCRIPTOR.name, "weekday_digest");

    // 23:30 UTC on Monday 7 January 2030 is already Tuesday in Paris.
    let utc = Timestamp::from_timestamp_millis(1_894_059_000_000).unwrap();
    let at = Occurrence::new(utc, "Europe/Paris".parse().unwrap());
    let entries = WeekdayDigest::entries(&at);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].job_name(), "send_digest");
    assert_eq!(entries[0].idempotency_key(), Some("digest:2030-01-08"));

    // The registry entry the attribute submits.
    let entry = TaskEntry::of::<WeekdayDigest>();
    assert_eq!(entry.descriptor().name, "weekday_digest");
    assert!(entry.type_name().ends_with("WeekdayDigest"));
    assert_eq!(entry.entries(&at).len(), 1);

    // 09:00 Paris on Monday 7 January 2030; the next is Tuesday's.
    let monday = Timestamp::from_timestamp_millis(1_894_003_200_000).unwrap();
    let next = WeekdayDigest::next_run(monday).unwrap();
    assert_eq!(next.timestamp_millis(), 1_894_089_600_000);

    // A manual fire enqueues under the job's plain key, so a second one is deduplicated.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let jobs = Jobs::memory();
        let fired = WeekdayDigest::enqueue(&jobs).await.unwrap();
        assert_eq!(fired.len(), 1);
        let again = WeekdayDigest::enqueue(&jobs).await.unwrap();
        assert!(again[0].deduped && again[0].id == fired[0].id);
    });
}
