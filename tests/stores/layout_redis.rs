//! The Redis driver's layout of running rows: they live in a set of their own (so a read of the
//! running rows never walks the suspended ones), and a running row an older build filed in the
//! timed set (a bare id there) is still counted, recovered when its lease lapses and taken out
//! when it settles, while a stale entry (a row an older build's ack took out of the timed set
//! only) is never listed as running and is dropped by the next claim, never claimed. And the
//! index members keep their widths, and times compare as numbers, whatever a time's length.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use jobs::driver::introspect::JobListParams;
use jobs::driver::{
    AckParams, ClaimParams, ClaimedJob, JobDriver, JobState, QueueDemand, QueueStatsParams,
    RedisDriver,
};
use uuid::Uuid;

use crate::support;
use support::redis::RedisServer;

const QUEUE: &str = "layout";

fn t(secs: i64) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2030-01-01T00:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
        + chrono::Duration::seconds(secs)
}

/// A driver under a prefix of its own, and that queue's key head (`{<prefix>:q:layout}`).
async fn driver(test: &str) -> (&'static RedisServer, Arc<dyn JobDriver>, String) {
    let server = support::redis::shared_server();
    let prefix = support::redis::prefix(test);
    let url = format!("{}/?prefix={prefix}", server.url());
    let driver = RedisDriver::connect(&url)
        .await
        .expect("the server answers");
    (server, Arc::new(driver), format!("{{{prefix}:q:{QUEUE}}}"))
}

async fn enqueue(driver: &dyn JobDriver, key: &str) -> Uuid {
    let request = support::request::request("layout.job", QUEUE, key, t(0), t(0));
    driver.job_enqueue(&request).await.expect("enqueued").id
}

/// Claims every due job of the queue at `now`, with a lease of 30 s.
async fn claim(driver: &dyn JobDriver, now: DateTime<Utc>) -> Vec<ClaimedJob> {
    let params = ClaimParams {
        demand: vec![QueueDemand {
            queue: QUEUE.into(),
            limit: 10,
        }],
        worker_id: "w".into(),
        visibility_timeout: Duration::from_secs(30),
        drop_exhausted: Vec::new(),
        fair_after: String::new(),
        now,
    };
    driver.job_claim(&params).await.expect("claimed").jobs
}

async fn ack(driver: &dyn JobDriver, job: &ClaimedJob, now: DateTime<Utc>) -> bool {
    let params = AckParams {
        job_id: job.id,
        by: job.by.clone(),
        result: None,
        now,
    };
    driver.job_ack(&params).await.expect("acked")
}

async fn running(driver: &dyn JobDriver, now: DateTime<Utc>) -> u64 {
    let stats = driver
        .queue_stats(&QueueStatsParams { now })
        .await
        .expect("stats");
    stats
        .iter()
        .find(|s| s.queue == QUEUE)
        .map_or(0, |s| s.running)
}

/// The members of the sorted set `key`.
fn members(server: &RedisServer, key: &str) -> Vec<String> {
    server
        .cli(&["ZRANGE", key, "0", "-1"])
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// Moves a running row from the running set to the timed set, as an older build filed it.
fn file_as_older_build(server: &RedisServer, head: &str, id: Uuid) {
    let run = format!("{head}:run");
    let score = server.cli(&["ZSCORE", &run, &id.to_string()]);
    let score = score.trim();
    assert!(!score.is_empty(), "{id} is in the running set");
    server.cli(&["ZREM", &run, &id.to_string()]);
    server.cli(&["ZADD", &format!("{head}:timed"), score, &id.to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_rows_live_in_a_set_of_their_own() {
    let (server, d, head) = driver("running_set").await;
    let id = enqueue(&*d, "a").await;
    let job = claim(&*d, t(1)).await.pop().expect("one job");
    assert_eq!(job.id, id);
    assert_eq!(members(server, &format!("{head}:run")), [id.to_string()]);
    assert!(members(server, &format!("{head}:timed")).is_empty());
    assert_eq!(running(&*d, t(1)).await, 1);
    assert!(ack(&*d, &job, t(2)).await);
    assert!(members(server, &format!("{head}:run")).is_empty());
    assert_eq!(running(&*d, t(2)).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_row_an_older_build_filed_in_the_timed_set_is_counted_recovered_and_settled() {
    let (server, d, head) = driver("older_build").await;
    let lapsing = enqueue(&*d, "lapsing").await;
    let settling = enqueue(&*d, "settling").await;
    let claimed = claim(&*d, t(1)).await;
    assert_eq!(claimed.len(), 2);
    for job in &claimed {
        file_as_older_build(server, &head, job.id);
    }
    assert_eq!(running(&*d, t(1)).await, 2, "counted from the timed set");

    // One settles: it leaves the timed set.
    let settled = claimed.iter().find(|j| j.id == settling).unwrap();
    assert!(ack(&*d, settled, t(2)).await);
    assert_eq!(
        members(server, &format!("{head}:timed")),
        [lapsing.to_string()]
    );

    // The other's lease lapses: claimed again, into the running set.
    let again = claim(&*d, t(40)).await;
    assert_eq!(again.iter().map(|j| j.id).collect::<Vec<_>>(), [lapsing]);
    assert_eq!(again[0].attempt, 2);
    assert!(members(server, &format!("{head}:timed")).is_empty());
    assert_eq!(
        members(server, &format!("{head}:run")),
        [lapsing.to_string()]
    );
    assert_eq!(running(&*d, t(40)).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_running_entry_is_dropped_never_claimed() {
    let (server, d, head) = driver("stale_entry").await;
    let id = enqueue(&*d, "done").await;
    let job = claim(&*d, t(1)).await.pop().expect("one job");
    let run = format!("{head}:run");
    let score = server.cli(&["ZSCORE", &run, &id.to_string()]);
    assert!(ack(&*d, &job, t(2)).await);
    // What an older build's ack leaves: the entry, its job done.
    server.cli(&["ZADD", &run, score.trim(), &id.to_string()]);
    let listed = d
        .introspect()
        .expect("an operator surface")
        .job_list(&JobListParams::default())
        .await
        .expect("listed");
    assert_eq!(
        listed.jobs.iter().map(|j| j.id).collect::<Vec<_>>(),
        [id],
        "listed once, as done"
    );
    assert_eq!(listed.jobs[0].state, JobState::Done);
    assert!(
        claim(&*d, t(40)).await.is_empty(),
        "a done job is never claimed"
    );
    assert!(members(server, &run).is_empty(), "the stale entry is gone");
}

/// Times are decimal texts of microseconds, which the scripts compare as text when two have one
/// length and pad into index members without a number conversion: a time of fewer digits (in
/// 1970) or of more (in 2300) than the store's now still compares as a number, and the members
/// keep their widths (creation 17 digits, then ':' and the id; insertion order 16, then the id).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn times_of_other_lengths_compare_as_numbers_and_members_keep_their_widths() {
    let (server, d, head) = driver("time_texts").await;
    let early = DateTime::from_timestamp_micros(999).expect("a time");
    let late = DateTime::parse_from_rfc3339("2300-01-01T00:00:00Z")
        .unwrap()
        .with_timezone(&Utc);
    let enqueue_at = |key: &'static str, run_at, now| {
        let request = support::request::request("layout.job", QUEUE, key, run_at, now);
        let d = d.clone();
        async move { d.job_enqueue(&request).await.expect("enqueued").id }
    };
    let due = enqueue_at("due", early, t(0)).await;
    let later = enqueue_at("later", late, t(0)).await;
    let claimed = claim(&*d, t(1)).await;
    assert_eq!(
        claimed.iter().map(|j| j.id).collect::<Vec<_>>(),
        [due],
        "due in 1970 is due; due in 2300 is not"
    );
    assert_eq!(
        members(server, &format!("{head}:st:delayed")),
        [format!("{:017}:{later}", t(0).timestamp_micros())]
    );
    // Created at a time of three digits: padded to 17.
    let old = enqueue_at("old", early, early).await;
    assert_eq!(
        members(server, &format!("{head}:st:ready")),
        [format!("00000000000000999:{old}")]
    );
    assert_eq!(
        members(server, &format!("{head}:due:")),
        [format!("{:016}{old}", 3), format!("{:016}{later}", 2)],
        "by due time, each member its insertion order then its id"
    );
}
