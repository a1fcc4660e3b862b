//! The per-job counters: what each settle adds (a batched ack and a burial too), and the
//! rollup that folds buckets into the next tier.

use super::*;

/// The settle itself moves the counters: an ack adds `done`, a counted retry `retried`, a fail
/// `failed`, a dead letter (or a burial) `dead`; a suspension, an uncounted hand-back and a
/// cancel add nothing. Durations run from the claim to the settle.
pub async fn counters_move_with_the_settle(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let name = "conformance.job";
    let settle = |target: Option<NackTarget>, counted: bool, key: &'static str| async move {
        enqueue_key(d, key).await;
        let job = claim_one(d, "w1", at(60)).await;
        match target {
            None => assert!(ack(d, job.id, &job.by, at(62)).await),
            Some(target) => {
                let mut params = nack_params(job.id, &job.by, target, at(10_000), at(62));
                params.counts_as_attempt = counted;
                assert!(nack(d, &params).await);
            }
        }
    };
    settle(None, true, "done").await;
    settle(Some(NackTarget::Retry), true, "retried").await;
    settle(Some(NackTarget::Retry), false, "shed").await;
    settle(Some(NackTarget::Park), false, "parked").await;
    settle(Some(NackTarget::Fail), true, "failed").await;
    settle(Some(NackTarget::DeadLetter), true, "dead").await;
    let cancelled = enqueue_key(d, "cancelled").await;
    claim_one(d, "w1", at(60)).await;
    d.job_cancel(&JobCancelParams {
        reason: None,
        id: cancelled,
        now: at(62),
        actor: None,
    })
    .await
    .unwrap();

    let buckets = p
        .counters(&CountersParams { name, since: t0() })
        .await
        .unwrap();
    assert_eq!(
        buckets,
        [CounterBucket {
            bucket: Some(at(60)),
            width_secs: 60,
            done: 1,
            retried: 1,
            failed: 1,
            dead: 1,
            duration_ms: 4 * 2_000,
        }]
    );
    assert!(p
        .counters(&CountersParams {
            name,
            since: at(61)
        })
        .await
        .unwrap()
        .is_empty());
    assert!(p
        .counters(&CountersParams {
            name: "other",
            since: t0()
        })
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        p.counter_totals(&CounterTotalsParams { since: t0() })
            .await
            .unwrap(),
        [CounterTotals {
            name: name.into(),
            done: 1,
            retried: 1,
            failed: 1,
            dead: 1,
            duration_ms: 8_000,
        }]
    );
}

/// A batched ack counts each job it settles, and a claim's burial of a lapsed final attempt
/// counts it dead, with the attempt's duration from its claim.
pub async fn counters_count_a_batched_ack_and_a_burial(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let mut last = request("conformance.job", "buried");
    last.max_attempts = 1;
    enqueue(d, &last).await;
    claim_one(d, "w1", at(60)).await;
    enqueue_key(d, "a").await;
    enqueue_key(d, "b").await;
    // The lease of the first lapses at 60 + VISIBILITY; this claim buries it and takes the two.
    let later = at(60)
        + chrono::Duration::from_std(VISIBILITY).expect("small")
        + chrono::Duration::seconds(5);
    let result = claim(d, &claim_params("w2", 10, later)).await;
    assert_eq!(result.exhausted.len(), 1);
    assert_eq!(result.jobs.len(), 2);
    let acks: Vec<AckParams> = result
        .jobs
        .iter()
        .map(|j| AckParams {
            job_id: j.id,
            by: j.by.clone(),
            result: None,
            now: later + chrono::Duration::seconds(10),
        })
        .collect();
    assert_eq!(d.job_ack_many(&acks).await.unwrap(), vec![true, true]);
    let buried_ms = (later - at(60)).num_milliseconds() as u64;
    let totals = p
        .counter_totals(&CounterTotalsParams { since: t0() })
        .await
        .unwrap();
    assert_eq!(
        totals,
        [CounterTotals {
            name: "conformance.job".into(),
            done: 2,
            retried: 0,
            failed: 0,
            dead: 1,
            duration_ms: buried_ms + 2 * 10_000,
        }]
    );
}

/// The rollup folds 1-minute buckets older than a day into 5-minute ones, those older than a
/// week into hours, and drops hours older than 30 days; a second run at the same time moves
/// nothing.
pub async fn counters_rollup_folds_buckets_into_the_next_tier(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let name = "conformance.job";
    // Two completions in two minutes of one 5-minute bucket (minutes 1 and 2).
    for (n, minute) in [1_i64, 2].into_iter().enumerate() {
        enqueue(d, &request_at(name, &format!("k{n}"), at(minute * 60))).await;
        let job = claim_one(d, "w1", at(minute * 60)).await;
        assert!(ack(d, job.id, &job.by, at(minute * 60 + 1)).await);
    }
    assert_eq!(
        p.counters(&CountersParams { name, since: t0() })
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        p.counters_rollup(&CountersRollupParams { now: at(3600) })
            .await
            .unwrap(),
        0,
        "still a day's minutes"
    );

    let day = 24 * 3600;
    assert!(
        p.counters_rollup(&CountersRollupParams {
            now: at(day + 3600)
        })
        .await
        .unwrap()
            > 0
    );
    assert_eq!(
        p.counters_rollup(&CountersRollupParams {
            now: at(day + 3600)
        })
        .await
        .unwrap(),
        0,
        "idempotent"
    );
    let folded = p
        .counters(&CountersParams { name, since: t0() })
        .await
        .unwrap();
    assert_eq!(
        folded,
        [CounterBucket {
            bucket: Some(t0()),
            width_secs: 300,
            done: 2,
            retried: 0,
            failed: 0,
            dead: 0,
            duration_ms: 2_000,
        }]
    );
    assert!(
        p.counters_rollup(&CountersRollupParams { now: at(8 * day) })
            .await
            .unwrap()
            > 0
    );
    let hourly = p
        .counters(&CountersParams { name, since: t0() })
        .await
        .unwrap();
    assert_eq!(
        (hourly.len(), hourly[0].width_secs, hourly[0].done),
        (1, 3600, 2)
    );
    assert_eq!(
        p.counter_totals(&CounterTotalsParams { since: t0() })
            .await
            .unwrap()[0]
            .done,
        2
    );
    assert!(
        p.counters_rollup(&CountersRollupParams { now: at(31 * day) })
            .await
            .unwrap()
            > 0
    );
    assert!(
        p.counters(&CountersParams { name, since: t0() })
            .await
            .unwrap()
            .is_empty(),
        "past 30 days: dropped"
    );
}
