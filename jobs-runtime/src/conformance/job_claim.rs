//! `job_claim`: demand, claim order, per-queue limits, due times, exclusive hand-out under
//! concurrency, re-delivery after a lapsed lease, and the burial of a lapsed final attempt.

use std::collections::HashSet;
use std::sync::Arc;

use super::*;
use crate::driver::StepPutParams;

/// A claim that names no queue is refused with `X_JOB_CLAIM_QUEUES_EMPTY`.
pub async fn job_claim_refuses_empty_demand(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    enqueue_key(d, "k").await;
    let mut params = claim_params("w1", 10, t0());
    params.demand.clear();
    assert_refused(d.job_claim(&params).await, ErrorCode::JobClaimQueuesEmpty);
    assert_eq!(
        stats_of(d, QUEUE, t0()).await.ready,
        1,
        "nothing was claimed"
    );
}

/// A claimed row is `running` under the claiming worker with claim ordinal 1, attempt 1, and
/// invisible until `now + visibility_timeout`; the claimed job carries the row.
pub async fn job_claim_marks_rows_running_under_the_claim(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let mut req = request("conformance.job", "k");
    req.tenant_id = Some("acme".into());
    req.max_attempts = 4;
    enqueue(d, &req).await;
    let job = claim_one(d, "w1", at(5)).await;
    assert_eq!(job.id, req.id);
    assert_eq!(job.run_id, req.run_id);
    assert_eq!(&*job.name, "conformance.job");
    assert_eq!(&*job.queue, QUEUE);
    assert_eq!(*job.input, req.input);
    assert_eq!(job.attempt, 1);
    assert_eq!(job.max_attempts, 4);
    assert_eq!(job.tenant_id.as_deref(), Some("acme"));
    assert_eq!(
        job.by,
        ClaimIdentity {
            worker_id: "w1".into(),
            claim: 1
        }
    );
    assert_eq!(job.visible_at, at(35));

    let row = get(d, req.id).await;
    assert_eq!(row.state, JobState::Running);
    assert_eq!(row.attempt, 1);
    assert_eq!(row.claims, 1);
    assert_eq!(row.claimed_by.as_deref(), Some("w1"));
    assert_eq!(row.visible_at, Some(at(35)));
    assert_eq!(row.updated_at, at(5));
    claim_none(d, "w2", at(5)).await;
}

/// Due rows are taken oldest `run_at` first: with room for two of three, the two earliest go.
pub async fn job_claim_takes_due_rows_oldest_run_at_first(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let mut ids = Vec::new();
    for (key, run_at) in [("late", 3), ("early", 1), ("middle", 2)] {
        let mut req = request("conformance.job", key);
        req.run_at = at(run_at);
        ids.push(enqueue(d, &req).await.id);
    }
    let (late, early, middle) = (ids[0], ids[1], ids[2]);
    let result = claim(d, &claim_params("w1", 2, at(10))).await;
    let taken: HashSet<_> = result.jobs.iter().map(|j| j.id).collect();
    assert_eq!(taken, HashSet::from([early, middle]));
    let next = claim_one(d, "w1", at(10)).await;
    assert_eq!(next.id, late);
}

/// The claim takes turns across tenants: each tenant's oldest row first, then each tenant's
/// second, so a tenant's backlog never makes another tenant wait behind it.
pub async fn job_claim_takes_turns_across_tenants(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let mut big = Vec::new();
    for i in 0..6 {
        let mut req = request("conformance.job", &format!("big-{i}"));
        req.tenant_id = Some("big".into());
        req.run_at = at(i);
        big.push(enqueue(d, &req).await.id);
    }
    let mut small = Vec::new();
    for (tenant, run_at) in [("small-a", 10), ("small-b", 20)] {
        let mut req = request("conformance.job", tenant);
        req.tenant_id = Some(tenant.into());
        req.run_at = at(run_at);
        small.push(enqueue(d, &req).await.id);
    }
    let mut unowned = request("conformance.job", "no-tenant");
    unowned.run_at = at(30);
    let unowned = enqueue(d, &unowned).await.id;
    // Four slots: the first turn of each of the four tenants (no tenant is one), although six
    // rows of "big" are older than all of them.
    let first = claim(d, &claim_params("w1", 4, at(40))).await;
    let taken: HashSet<_> = first.jobs.iter().map(|j| j.id).collect();
    assert_eq!(taken, HashSet::from([big[0], small[0], small[1], unowned]));
    // Then the big tenant's backlog, oldest first.
    let second = claim(d, &claim_params("w1", 2, at(40))).await;
    let taken: HashSet<_> = second.jobs.iter().map(|j| j.id).collect();
    assert_eq!(taken, HashSet::from([big[1], big[2]]));
}

/// Within a tenant the higher priority is claimed first, then the earlier `run_at`: a row of
/// priority 3 due last goes before the default rows due earlier, a row of priority -2 after
/// them, and a row of the highest priority not yet due waits for its time. A claimed row and
/// its record keep their priority, as does a batch's row.
pub async fn job_claim_takes_the_higher_priority_first(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let mut ids = std::collections::HashMap::new();
    for (key, priority, run_at) in [
        ("low", -2, 1),
        ("plain-a", 0, 2),
        ("plain-b", 0, 3),
        ("high", 3, 4),
        ("top-later", MAX_PRIORITY, 60),
    ] {
        let mut req = request("conformance.job", key);
        req.tenant_id = Some("acme".into());
        req.priority = priority;
        req.run_at = at(run_at);
        ids.insert(key, enqueue(d, &req).await.id);
    }
    for key in ["high", "plain-a", "plain-b", "low"] {
        let job = claim_one(d, "w1", at(10)).await;
        assert_eq!(job.id, ids[key], "expected `{key}` next");
    }
    claim_none(d, "w1", at(10)).await;
    assert_eq!(claim_one(d, "w1", at(60)).await.id, ids["top-later"]);
    assert_eq!(get(d, ids["high"]).await.priority, 3);
    assert_eq!(get(d, ids["low"]).await.priority, -2);
    assert_eq!(get(d, ids["plain-a"]).await.priority, DEFAULT_PRIORITY);

    // A batch's rows carry theirs: its later, higher row goes first.
    let mut low = request("conformance.job", "batch-low");
    low.priority = MIN_PRIORITY;
    low.run_at = at(20);
    let mut high = request("conformance.job", "batch-high");
    high.priority = 1;
    high.run_at = at(21);
    d.job_enqueue_many(&[low.clone(), high.clone()])
        .await
        .unwrap_or_else(|e| panic!("enqueue_many failed: {e}"));
    assert_eq!(claim_one(d, "w1", at(30)).await.id, high.id);
    assert_eq!(claim_one(d, "w1", at(30)).await.id, low.id);
    assert_eq!(get(d, low.id).await.priority, MIN_PRIORITY);
}

/// A tenant's rows not yet due, in any class, neither block nor are taken: with rows due in the
/// default and the lowest class and rows delayed in the highest and the default, claims take
/// the due default row, then a row of priority 3 enqueued since (ahead of the floor a store
/// keeps), then the due lowest row, and nothing more until the delayed rows fall due, highest
/// priority first.
pub async fn job_claim_passes_rows_not_yet_due_in_every_class(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let mut ids = std::collections::HashMap::new();
    for (key, priority, run_at) in [
        ("top-delayed", MAX_PRIORITY, 25),
        ("plain-due", 0, 1),
        ("plain-delayed", 0, 20),
        ("low-due", MIN_PRIORITY, 2),
    ] {
        let mut req = request("conformance.job", key);
        req.priority = priority;
        req.run_at = at(run_at);
        ids.insert(key, enqueue(d, &req).await.id);
    }
    assert_eq!(claim_one(d, "w1", at(10)).await.id, ids["plain-due"]);
    let mut late = request("conformance.job", "late-high");
    late.priority = 3;
    late.run_at = at(11);
    let late = enqueue(d, &late).await.id;
    assert_eq!(claim_one(d, "w1", at(12)).await.id, late);
    assert_eq!(claim_one(d, "w1", at(12)).await.id, ids["low-due"]);
    claim_none(d, "w1", at(13)).await;
    assert_eq!(claim_one(d, "w1", at(20)).await.id, ids["plain-delayed"]);
    // (The leases taken so far hold until 40: nothing comes back before then.)
    let mut one = request("conformance.job", "after");
    one.priority = 1;
    one.run_at = at(25);
    let one = enqueue(d, &one).await.id;
    assert_eq!(claim_one(d, "w1", at(25)).await.id, ids["top-delayed"]);
    assert_eq!(claim_one(d, "w1", at(25)).await.id, one);
    claim_none(d, "w1", at(26)).await;
}

/// Tenants take turns before priorities count: with two slots, tenant `a`'s two rows of the
/// highest priority give one slot to tenant `b`'s row of the lowest (one row per tenant per
/// turn). Within a turn the higher priority goes first, before the earlier run time: with one
/// slot, `a`'s row of priority 5 wins over tenant `c`'s older row of the default.
pub async fn job_claim_takes_turns_across_tenants_before_priorities(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let enqueue_as = |tenant: &'static str, key: &'static str, priority: i16, run_at: i64| {
        let mut req = request("conformance.job", key);
        req.tenant_id = Some(tenant.into());
        req.priority = priority;
        req.run_at = at(run_at);
        async move { enqueue(d, &req).await.id }
    };
    let a1 = enqueue_as("a", "a1", MAX_PRIORITY, 1).await;
    let a2 = enqueue_as("a", "a2", MAX_PRIORITY, 2).await;
    let b1 = enqueue_as("b", "b1", MIN_PRIORITY, 0).await;
    let first = claim(d, &claim_params("w1", 2, at(10))).await;
    let taken: HashSet<_> = first.jobs.iter().map(|j| j.id).collect();
    assert_eq!(
        taken,
        HashSet::from([a1, b1]),
        "fairness first: each tenant's turn before a second row of the higher priority"
    );
    let c1 = enqueue_as("c", "c1", DEFAULT_PRIORITY, 0).await;
    let job = claim_one(d, "w1", at(10)).await;
    assert_eq!(
        job.id, a2,
        "within a turn, the higher priority before the older row"
    );
    assert_eq!(claim_one(d, "w1", at(10)).await.id, c1);
}

/// A row whose `run_at` is still in the future is not claimed until it is due.
pub async fn job_claim_skips_rows_not_yet_due(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let mut req = request("conformance.job", "later");
    req.run_at = at(60);
    enqueue(d, &req).await;
    claim_none(d, "w1", t0()).await;
    claim_none(d, "w1", at(59)).await;
    assert_eq!(get(d, req.id).await.state, JobState::Delayed);
    let job = claim_one(d, "w1", at(60)).await;
    assert_eq!(job.id, req.id);
}

/// Each queue gives at most its own demand; a queue not named gives nothing; a zero demand
/// takes nothing.
pub async fn job_claim_respects_each_queue_limit(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    for queue in ["a", "b", "c"] {
        for i in 0..5 {
            let mut req = request("conformance.job", &format!("{queue}-{i}"));
            req.queue = queue.to_string();
            enqueue(d, &req).await;
        }
    }
    let mut params = claim_params("w1", 0, t0());
    params.demand = vec![
        QueueDemand {
            queue: "a".into(),
            limit: 2,
        },
        QueueDemand {
            queue: "b".into(),
            limit: 3,
        },
        QueueDemand {
            queue: "c".into(),
            limit: 0,
        },
        QueueDemand {
            queue: "empty".into(),
            limit: 4,
        },
    ];
    let result = claim(d, &params).await;
    let count = |q: &str| result.jobs.iter().filter(|j| &*j.queue == q).count();
    assert_eq!((count("a"), count("b"), count("c")), (2, 3, 0));
    assert_eq!(result.jobs.len(), 5);
    assert_eq!(stats_of(d, "a", t0()).await.ready, 3);
    assert_eq!(stats_of(d, "b", t0()).await.ready, 2);
    assert_eq!(stats_of(d, "c", t0()).await.ready, 5);
}

/// Ten claimers at once over a hundred rows: every row is handed out exactly once.
pub async fn job_claim_never_hands_one_row_to_two_claimers(driver: Arc<dyn JobDriver>) {
    let requests: Vec<_> = (0..100)
        .map(|i| request("conformance.job", &format!("k{i}")))
        .collect();
    driver.job_enqueue_many(&requests).await.unwrap();
    let barrier = Arc::new(tokio::sync::Barrier::new(10));
    let tasks: Vec<_> = (0..10)
        .map(|w| {
            let driver = driver.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                let mut mine = Vec::new();
                loop {
                    let params = claim_params(&format!("w{w}"), 7, t0());
                    let result = driver.job_claim(&params).await.expect("claim failed");
                    if result.jobs.is_empty() {
                        return mine;
                    }
                    mine.extend(result.jobs.into_iter().map(|j| j.id));
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("claimer panicked"));
    }
    let distinct: HashSet<_> = all.iter().copied().collect();
    assert_eq!(distinct.len(), all.len(), "a row was handed out twice");
    assert_eq!(all.len(), 100, "every row was handed out");
    claim_none(&*driver, "late", t0()).await;
    assert_eq!(stats_of(&*driver, QUEUE, t0()).await.running, 100);
}

/// A running row whose lease lapsed is claimed again, by any worker, with the next attempt and
/// a new claim ordinal; not a moment before `visible_at`.
pub async fn job_claim_redelivers_a_running_row_after_its_visibility_timeout(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let id = enqueue_key(d, "k").await;
    let first = claim_one(d, "w1", t0()).await;
    assert_eq!(first.visible_at, at(30));
    claim_none(d, "w2", at(29)).await;
    let second = claim_one(d, "w2", at(30)).await;
    assert_eq!(second.id, id);
    assert_eq!(second.run_id, first.run_id);
    assert_eq!(second.attempt, 2);
    assert_eq!(
        second.by,
        ClaimIdentity {
            worker_id: "w2".into(),
            claim: 2
        }
    );
    assert_eq!(second.visible_at, at(60));
    // The same worker re-claiming after a lapse also gets a new ordinal.
    let third = claim_one(d, "w2", at(60)).await;
    assert_eq!(third.attempt, 3);
    assert_eq!(third.by.claim, 3);
    let row = get(d, id).await;
    assert_eq!(row.claims, 3);
    assert_eq!(row.attempt, 3);
}

/// Lapsed running rows and queued rows share one queue's demand.
pub async fn job_claim_counts_lapsed_and_queued_rows_against_one_limit(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let lapsed = enqueue_key(d, "lapsed").await;
    claim_one(d, "w1", t0()).await;
    let mut queued = Vec::new();
    for i in 0..3 {
        let mut req = request("conformance.job", &format!("q{i}"));
        req.run_at = at(i);
        req.now = at(i);
        queued.push(enqueue(d, &req).await.id);
    }
    let result = claim(d, &claim_params("w2", 2, at(40))).await;
    assert_eq!(result.jobs.len(), 2, "one limit for lapsed and queued rows");
    let taken: HashSet<_> = result.jobs.iter().map(|j| j.id).collect();
    // Due times: q0 at 0, q1 at 1, q2 at 2, the lapsed row at 30.
    assert_eq!(taken, HashSet::from([queued[0], queued[1]]));
    let rest = claim(d, &claim_params("w2", 10, at(40))).await;
    let taken: HashSet<_> = rest.jobs.iter().map(|j| j.id).collect();
    assert_eq!(taken, HashSet::from([queued[2], lapsed]));
}

/// A running row whose lease lapsed on its final attempt is buried `dead` with
/// `LEASE_LAPSED_FINAL_ATTEMPT`, reported in `exhausted`, never handed out, and its key freed.
pub async fn job_claim_buries_a_lapsed_final_attempt_dead(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let mut req = request("conformance.job", "k");
    req.max_attempts = 1;
    enqueue(d, &req).await;
    claim_one(d, "w1", t0()).await;
    let result = claim(d, &claim_params("w2", 10, at(30))).await;
    assert!(
        result.jobs.is_empty(),
        "a lapsed final attempt is never handed out"
    );
    assert_eq!(result.exhausted.len(), 1);
    let buried = &result.exhausted[0];
    assert_eq!(buried.id, req.id);
    assert_eq!(buried.state, JobState::Dead);
    assert_eq!(
        buried.last_error.as_deref(),
        Some(LEASE_LAPSED_FINAL_ATTEMPT)
    );
    let row = get(d, req.id).await;
    assert_eq!(row.state, JobState::Dead);
    assert_eq!(row.attempt, 1);
    assert_eq!(row.visible_at, None);
    assert_eq!(row.last_error.as_deref(), Some(LEASE_LAPSED_FINAL_ATTEMPT));
    // Reported once: the next claim neither hands it out nor reports it again.
    let again = claim(d, &claim_params("w2", 10, at(100))).await;
    assert!(again.jobs.is_empty() && again.exhausted.is_empty());
    assert_eq!(stats_of(d, QUEUE, at(100)).await.dead, 1);
    assert!(!enqueue(d, &request("conformance.job", "k")).await.deduped);
}

/// A burial spends none of the demand: with room for one, the claim buries a lapsed final
/// attempt and still hands out the next due row.
pub async fn job_claim_buries_without_spending_demand(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let mut exhausted = request("conformance.job", "exhausted");
    exhausted.max_attempts = 1;
    enqueue(d, &exhausted).await;
    claim_one(d, "w1", t0()).await;
    let mut ready = request("conformance.job", "ready");
    ready.run_at = at(31);
    enqueue(d, &ready).await;
    // Due order at +40: the lapsed row (visible_at +30), then the ready one (+31).
    let result = claim(d, &claim_params("w2", 1, at(40))).await;
    assert_eq!(
        result.exhausted.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![exhausted.id]
    );
    assert_eq!(
        result.jobs.iter().map(|j| j.id).collect::<Vec<_>>(),
        vec![ready.id]
    );
}

/// A claim with no free slot (what `jobs drain` runs) still buries a lapsed final attempt, and
/// hands nothing out: neither a lapsed row with attempts left nor a due one.
pub async fn job_claim_with_no_slot_buries_and_hands_out_nothing(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let mut exhausted = request("conformance.job", "exhausted");
    exhausted.max_attempts = 1;
    enqueue(d, &exhausted).await;
    let mut lapsed = request("conformance.job", "lapsed");
    lapsed.max_attempts = 3;
    enqueue(d, &lapsed).await;
    assert_eq!(claim(d, &claim_params("w1", 10, t0())).await.jobs.len(), 2);
    enqueue(d, &request("conformance.job", "ready")).await;
    let result = claim(d, &claim_params("drain", 0, at(40))).await;
    assert!(result.jobs.is_empty(), "no slot, nothing handed out");
    assert_eq!(
        result.exhausted.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![exhausted.id]
    );
    assert_eq!(get(d, exhausted.id).await.state, JobState::Dead);
    assert_eq!(get(d, lapsed.id).await.state, JobState::Running);
    // The rows left are claimed as before.
    let next = claim(d, &claim_params("w2", 10, at(41))).await;
    assert_eq!(next.jobs.len(), 2);
    assert!(next.exhausted.is_empty());
}

/// The same burial settles `failed` for the job names in `drop_exhausted` (no dead letter);
/// other names in the same claim are still buried `dead`.
pub async fn job_claim_buries_a_lapsed_final_attempt_failed_for_dropped_names(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let mut dropped = request("conformance.dropped", "k");
    dropped.max_attempts = 1;
    enqueue(d, &dropped).await;
    let mut kept = request("conformance.kept", "k");
    kept.max_attempts = 1;
    enqueue(d, &kept).await;
    assert_eq!(claim(d, &claim_params("w1", 10, t0())).await.jobs.len(), 2);

    let mut params = claim_params("w2", 10, at(30));
    params.drop_exhausted = vec!["conformance.dropped".into()];
    let result = claim(d, &params).await;
    assert!(result.jobs.is_empty());
    assert_eq!(result.exhausted.len(), 2);
    let dropped_row = get(d, dropped.id).await;
    assert_eq!(dropped_row.state, JobState::Failed);
    assert_eq!(
        dropped_row.last_error.as_deref(),
        Some(LEASE_LAPSED_FINAL_ATTEMPT)
    );
    assert_eq!(get(d, kept.id).await.state, JobState::Dead);
    let stats = stats_of(d, QUEUE, at(30)).await;
    assert_eq!((stats.failed, stats.dead, stats.running), (1, 1, 0));
}

/// A parked (suspended) row is claimed again once its `run_at` comes, with the attempt it was
/// parked under handed back.
pub async fn job_claim_takes_a_suspended_row_once_due(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let id = enqueue_key(d, "k").await;
    let job = claim_one(d, "w1", t0()).await;
    let mut park = nack_params(id, &job.by, NackTarget::Park, at(3600), at(1));
    park.counts_as_attempt = false;
    park.error = None;
    park.error_code = None;
    assert!(nack(d, &park).await);
    claim_none(d, "w1", at(3599)).await;
    let resumed = claim_one(d, "w1", at(3600)).await;
    assert_eq!(resumed.id, id);
    assert_eq!(resumed.attempt, 1, "a suspension spends no attempt");
    assert_eq!(resumed.by.claim, 2);
}

/// A claimed job says whether its run has step records yet, each job of one claim for its own
/// run: none on a first claim; after a retry, only the run that wrote a step.
pub async fn job_claim_says_which_runs_have_steps(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let stepped = enqueue_key(d, "stepped").await;
    let plain = enqueue_key(d, "plain").await;
    let first = claim(d, &claim_params("w1", 2, t0())).await.jobs;
    assert_eq!(first.len(), 2);
    assert!(
        first.iter().all(|j| !j.has_steps),
        "a first claim finds no steps"
    );
    let job = first.iter().find(|j| j.id == stepped).expect("claimed");
    let record = completed_step_record(
        job.run_id,
        "charge",
        serde_json::json!({ "charged": true }),
        at(1),
    );
    let fence = step_fence(job);
    assert!(d
        .step_put(&StepPutParams {
            record: &record,
            fence: &fence,
        })
        .await
        .unwrap_or_else(|e| panic!("step_put failed: {e}")));
    for job in &first {
        assert!(
            nack(
                d,
                &nack_params(job.id, &job.by, NackTarget::Retry, at(2), at(2))
            )
            .await
        );
    }
    let again = claim(d, &claim_params("w1", 2, at(2))).await.jobs;
    let has_steps = |id: JobId| {
        again
            .iter()
            .find(|j| j.id == id)
            .unwrap_or_else(|| panic!("{id} claimed again"))
            .has_steps
    };
    assert!(has_steps(stepped), "the run that wrote a step has steps");
    assert!(!has_steps(plain), "the other run has none");
}
