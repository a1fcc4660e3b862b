//! The memory driver as a model of the Postgres driver: random operation sequences (enqueue,
//! claim, ack, nack, heartbeat, cancel, with explicit `now` values and stale claim identities
//! among the live ones) run against both, and after every operation both must answer the same
//! and hold the same rows.
//!
//! Ids are chosen by the test and grow with insertion order, so the two drivers' tie-breaks
//! (Postgres orders equal due times by id, memory by insertion) agree by construction.
//! `PROPTEST_CASES` sets the number of sequences (default 48).

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use jobs::clock::{add, Timestamp};
use jobs::driver::{
    AckParams, ClaimIdentity, ClaimParams, EnqueueRequest, HeartbeatParams, JobCancelParams,
    JobDriver, JobGetParams, JobId, JobRecord, MemoryDriver, NackParams, NackTarget, QueueDemand,
    QueueStatsParams,
};
use jobs::sqlx::{self, AssertSqlSafe, PgPool};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use support::pg;

#[derive(Debug, Clone)]
enum Op {
    Enqueue {
        key: u8,
        queue: u8,
        delay_s: u8,
        max_attempts: u8,
    },
    Claim {
        worker: u8,
        limit: u8,
        visibility_s: u8,
        drop_exhausted: bool,
    },
    Ack {
        pick: usize,
    },
    Nack {
        pick: usize,
        target: u8,
        counts: bool,
        delay_s: u8,
    },
    Heartbeat {
        pick: usize,
        visibility_s: u8,
    },
    Cancel {
        pick: usize,
    },
}

/// One operation and how far the clock moves before it.
fn op() -> impl Strategy<Value = (u8, Op)> {
    let op = prop_oneof![
        3 => (0u8..5, 0u8..2, 0u8..4, 1u8..4).prop_map(|(key, queue, delay_s, max_attempts)| Op::Enqueue { key, queue, delay_s, max_attempts }),
        3 => (0u8..3, 1u8..4, 1u8..6, any::<bool>()).prop_map(|(worker, limit, visibility_s, drop_exhausted)| Op::Claim { worker, limit, visibility_s, drop_exhausted }),
        2 => any::<usize>().prop_map(|pick| Op::Ack { pick }),
        2 => (any::<usize>(), 0u8..4, any::<bool>(), 0u8..4).prop_map(|(pick, target, counts, delay_s)| Op::Nack { pick, target, counts, delay_s }),
        1 => (any::<usize>(), 1u8..6).prop_map(|(pick, visibility_s)| Op::Heartbeat { pick, visibility_s }),
        1 => any::<usize>().prop_map(|pick| Op::Cancel { pick }),
    ];
    (0u8..4, op)
}

const QUEUES: [&str; 2] = ["default", "mail"];

fn t0() -> Timestamp {
    "2030-01-01T00:00:00Z".parse().expect("literal")
}

/// What both drivers are compared on: everything but the input and the write times.
fn view(r: &JobRecord) -> String {
    format!(
        "{} {} {} q={} key={} state={} attempt={}/{} run_at={} claimed_by={:?} claims={} \
         visible_at={:?} last_error={:?} code={:?}",
        r.id,
        r.run_id,
        r.name,
        r.queue,
        r.idempotency_key,
        r.state,
        r.attempt,
        r.max_attempts,
        r.run_at,
        r.claimed_by,
        r.claims,
        r.visible_at,
        r.last_error,
        r.last_error_code
    )
}

struct Pair {
    memory: MemoryDriver,
    postgres: Arc<dyn JobDriver>,
}

async fn run_sequence(pool: &PgPool, schema: &str, ops: &[(u8, Op)]) -> Result<(), TestCaseError> {
    run(pool, schema, ops, AVOID_KNOWN_BURIAL_DIVERGENCE).await
}

async fn run_sequence_raw(
    pool: &PgPool,
    schema: &str,
    ops: &[(u8, Op)],
) -> Result<(), TestCaseError> {
    run(pool, schema, ops, false).await
}

async fn run(
    pool: &PgPool,
    schema: &str,
    ops: &[(u8, Op)],
    avoid: bool,
) -> Result<(), TestCaseError> {
    sqlx::raw_sql(AssertSqlSafe(format!(
        "delete from {schema}.x_jobs; delete from {schema}.x_job_steps;"
    )))
    .execute(pool)
    .await
    .map_err(|e| TestCaseError::fail(format!("reset: {e}")))?;
    let pair = Pair {
        memory: MemoryDriver::new(),
        postgres: Arc::new(
            jobs::driver::PostgresDriver::new(pool.clone(), schema).expect("schema"),
        ),
    };
    let mut now = t0();
    let mut ids: Vec<JobId> = Vec::new();
    let mut claims: Vec<(JobId, ClaimIdentity)> = Vec::new();
    for (step, (advance, op)) in ops.iter().enumerate() {
        now = add(now, Duration::from_secs(u64::from(*advance)));
        let at = format!("op {step} {op:?} at {now}");
        match op {
            Op::Enqueue {
                key,
                queue,
                delay_s,
                max_attempts,
            } => {
                let n = ids.len() as u128 + 1;
                let run_at = add(now, Duration::from_secs(u64::from(*delay_s)));
                let request = EnqueueRequest {
                    id: uuid::Uuid::from_u128(n),
                    run_id: uuid::Uuid::from_u128((1 << 64) + n),
                    input: serde_json::json!({ "key": key }),
                    max_attempts: u32::from(*max_attempts),
                    ..support::request::request(
                        "model",
                        QUEUES[usize::from(*queue)],
                        &format!("k{key}"),
                        run_at,
                        now,
                    )
                };
                ids.push(request.id);
                let m = pair.memory.job_enqueue(&request).await;
                let p = pair.postgres.job_enqueue(&request).await;
                prop_assert_eq!(
                    format!("{:?}", m.map_err(|e| e.code())),
                    format!("{:?}", p.map_err(|e| e.code())),
                    "{}",
                    at
                );
            }
            Op::Claim {
                worker,
                limit,
                visibility_s,
                drop_exhausted,
            } => {
                let limit = if avoid {
                    limit_past_burials(&pair.memory, u32::from(*limit), now)
                } else {
                    u32::from(*limit)
                };
                let params = ClaimParams {
                    demand: QUEUES
                        .iter()
                        .map(|q| QueueDemand {
                            queue: q.to_string(),
                            limit,
                        })
                        .collect(),
                    worker_id: format!("w{worker}").into(),
                    visibility_timeout: Duration::from_secs(u64::from(*visibility_s)),
                    drop_exhausted: if *drop_exhausted {
                        vec!["model".into()]
                    } else {
                        Vec::new()
                    },
                    fair_after: String::new(),
                    now,
                };
                let m = pair.memory.job_claim(&params).await;
                let p = pair.postgres.job_claim(&params).await;
                let (m, p) = match (m, p) {
                    (Ok(m), Ok(p)) => (m, p),
                    (m, p) => {
                        prop_assert_eq!(
                            m.map(|_| ()).map_err(|e| e.code()),
                            p.map(|_| ()).map_err(|e| e.code()),
                            "{}",
                            at
                        );
                        continue;
                    }
                };
                let claimed = |r: &jobs::driver::ClaimResult| {
                    let mut jobs: Vec<String> = r
                        .jobs
                        .iter()
                        .map(|j| {
                            format!(
                                "{} attempt={}/{} by={:?} visible_at={}",
                                j.id, j.attempt, j.max_attempts, j.by, j.visible_at
                            )
                        })
                        .collect();
                    jobs.sort();
                    let mut buried: Vec<String> = r.exhausted.iter().map(view).collect();
                    buried.sort();
                    (jobs, buried)
                };
                prop_assert_eq!(claimed(&m), claimed(&p), "{}", at);
                claims.extend(m.jobs.iter().map(|j| (j.id, j.by.clone())));
            }
            Op::Ack { pick } => {
                let Some((job_id, by)) = pick_claim(&claims, *pick) else {
                    continue;
                };
                let params = AckParams {
                    job_id,
                    by,
                    result: None,
                    now,
                };
                let m = pair.memory.job_ack(&params).await;
                let p = pair.postgres.job_ack(&params).await;
                prop_assert_eq!(ok(m), ok(p), "{}", at);
            }
            Op::Nack {
                pick,
                target,
                counts,
                delay_s,
            } => {
                let Some((job_id, by)) = pick_claim(&claims, *pick) else {
                    continue;
                };
                let target = [
                    NackTarget::Retry,
                    NackTarget::Park,
                    NackTarget::Fail,
                    NackTarget::DeadLetter,
                ][usize::from(*target)];
                let params = NackParams {
                    job_id,
                    by,
                    target,
                    run_at: add(now, Duration::from_secs(u64::from(*delay_s))),
                    counts_as_attempt: *counts,
                    error: Some(format!("failed at op {step}")),
                    error_code: Some("X_TIMEOUT".into()),
                    now,
                };
                let m = pair.memory.job_nack(&params).await;
                let p = pair.postgres.job_nack(&params).await;
                prop_assert_eq!(ok(m), ok(p), "{}", at);
            }
            Op::Heartbeat { pick, visibility_s } => {
                let Some((job_id, by)) = pick_claim(&claims, *pick) else {
                    continue;
                };
                let params = HeartbeatParams {
                    job_id,
                    by,
                    visibility_timeout: Duration::from_secs(u64::from(*visibility_s)),
                    now,
                };
                let m = pair.memory.job_heartbeat(&params).await;
                let p = pair.postgres.job_heartbeat(&params).await;
                prop_assert_eq!(ok(m), ok(p), "{}", at);
            }
            Op::Cancel { pick } => {
                if ids.is_empty() {
                    continue;
                }
                let id = ids[pick % ids.len()];
                let m = pair
                    .memory
                    .job_cancel(&JobCancelParams {
                        reason: None,
                        id,
                        now,
                        actor: None,
                    })
                    .await;
                let p = pair
                    .postgres
                    .job_cancel(&JobCancelParams {
                        reason: None,
                        id,
                        now,
                        actor: None,
                    })
                    .await;
                prop_assert_eq!(
                    m.map(|r| view(&r)).map_err(|e| e.code()),
                    p.map(|r| view(&r)).map_err(|e| e.code()),
                    "{}",
                    at
                );
            }
        }
        // After every operation: the same rows, the same counts.
        for id in &ids {
            let m = pair
                .memory
                .job_get(&JobGetParams { id: *id })
                .await
                .map(|r| r.map(|r| view(&r)));
            let p = pair
                .postgres
                .job_get(&JobGetParams { id: *id })
                .await
                .map(|r| r.map(|r| view(&r)));
            prop_assert_eq!(
                m.map_err(|e| e.code()),
                p.map_err(|e| e.code()),
                "row {} after {}",
                id,
                at
            );
        }
        let m = pair
            .memory
            .queue_stats(&QueueStatsParams { now })
            .await
            .map_err(|e| e.code());
        let p = pair
            .postgres
            .queue_stats(&QueueStatsParams { now })
            .await
            .map_err(|e| e.code());
        prop_assert_eq!(m, p, "stats after {}", at);
    }
    Ok(())
}

/// Once a known divergence: the Postgres claim's burials spent the claim's demand (fixed: a
/// lapsed final attempt is buried without taking a slot, as the memory driver does).
/// `a_burial_spends_no_claim_demand` keeps the minimal sequence the model found.
const AVOID_KNOWN_BURIAL_DIVERGENCE: bool = false;

fn limit_past_burials(memory: &MemoryDriver, limit: u32, now: Timestamp) -> u32 {
    let mut raised = limit;
    for queue in QUEUES {
        let lapsed: Vec<JobRecord> = memory
            .all_jobs()
            .into_iter()
            .filter(|r| {
                r.queue == queue
                    && r.state == jobs::JobState::Running
                    && r.visible_at.is_some_and(|v| v <= now)
            })
            .collect();
        if lapsed.iter().any(|r| r.attempt >= r.max_attempts) {
            raised = raised.max(lapsed.len() as u32);
        }
    }
    raised
}

fn pick_claim(claims: &[(JobId, ClaimIdentity)], pick: usize) -> Option<(JobId, ClaimIdentity)> {
    if claims.is_empty() {
        return None;
    }
    // Mostly the latest claims (live), sometimes an old one (stale: the fence must refuse it).
    let i = if pick.is_multiple_of(3) {
        pick % claims.len()
    } else {
        claims.len() - 1 - (pick / 3) % claims.len().min(3)
    };
    Some(claims[i].clone())
}

fn ok(result: Result<bool, jobs::JobError>) -> Result<bool, Option<jobs::ErrorCode>> {
    result.map_err(|e| e.code())
}

#[test]
fn the_memory_driver_and_the_postgres_driver_answer_the_same_on_random_sequences() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (pool, schema) = runtime.block_on(pg::schema("fuzz_driver_model"));
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48);
    let mut runner = TestRunner::new(Config {
        cases,
        max_shrink_iters: 2_000,
        failure_persistence: None,
        ..Config::default()
    });
    let started = std::time::Instant::now();
    let result = runner.run(&proptest::collection::vec(op(), 1..40), |ops| {
        runtime.block_on(run_sequence(&pool, &schema, &ops))
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    println!(
        "driver model: {cases} sequences agreed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// The minimal sequence the model found (see [`AVOID_KNOWN_BURIAL_DIVERGENCE`]): a burial must
/// not spend the claim's demand on lapsed rows.
#[test]
fn a_burial_spends_no_claim_demand() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (pool, schema) = runtime.block_on(pg::schema("fuzz_known_divergence"));
    let enqueue = |key, max_attempts| Op::Enqueue {
        key,
        queue: 0,
        delay_s: 0,
        max_attempts,
    };
    let claim = |limit| Op::Claim {
        worker: 0,
        limit,
        visibility_s: 1,
        drop_exhausted: false,
    };
    let ops = vec![
        (0, enqueue(0, 1)),
        (0, enqueue(1, 2)),
        (0, claim(2)),
        // Both lapse: the exhausted one is buried, the other must still be claimed.
        (1, claim(1)),
    ];
    let result = runtime.block_on(run_sequence_raw(&pool, &schema, &ops));
    if let Err(e) = result {
        panic!("{e}");
    }
}
