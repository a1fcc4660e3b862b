//! Postgres: the known-tenant claim (`job_claim_known.sql`, `Plan::Known` in
//! `driver/postgres/floors.rs`). Right after a claim that searched, a claim may read only the
//! tenants its driver knows, from their floors. What that claim leaves out (a tenant enqueued
//! by another process, a lease that lapsed) waits one claim at most, and an empty answer is
//! never final: the same call searches at once.
//!
//! Each test drives one claiming driver and one enqueuing driver (another process, as far as
//! the claimer's floors know) over one schema, with explicit claim times.

use crate::support;

use std::collections::HashSet;
use std::time::Duration;

use jobs::driver::{
    ClaimParams, ClaimResult, ConflictPolicy, EnqueueRequest, JobDriver, PostgresDriver,
    QueueDemand,
};
use jobs::sqlx::PgPool;
use support::pg;
use uuid::Uuid;

const QUEUE: &str = "known";

/// Two drivers over one fresh schema: the claimer and another process's enqueuer.
async fn drivers(test: &str) -> (PostgresDriver, PostgresDriver) {
    let (pool, schema): (PgPool, String) = pg::schema(test).await;
    let claimer = PostgresDriver::new(pool.clone(), &schema).expect("schema");
    let other = PostgresDriver::new(pool, &schema).expect("schema");
    (claimer, other)
}

fn t0() -> jobs::clock::Timestamp {
    chrono::DateTime::parse_from_rfc3339("2030-01-01T00:00:00Z")
        .expect("a time")
        .with_timezone(&chrono::Utc)
}

fn ms(n: i64) -> jobs::clock::Timestamp {
    t0() + chrono::Duration::milliseconds(n)
}

/// Enqueues a due job of `tenant`, stamped at `at`.
async fn enqueue(driver: &PostgresDriver, tenant: &str, key: &str, at: i64) -> Uuid {
    enqueue_ranked(driver, tenant, key, at, 0).await
}

/// Enqueues a job of `tenant` and `priority`, due and stamped at `at`.
async fn enqueue_ranked(
    driver: &PostgresDriver,
    tenant: &str,
    key: &str,
    at: i64,
    priority: i16,
) -> Uuid {
    let request = EnqueueRequest {
        id: Uuid::now_v7(),
        run_id: Uuid::now_v7(),
        name: "known.job".into(),
        queue: QUEUE.into(),
        input: serde_json::json!({ "key": key }),
        idempotency_key: key.into(),
        tenant_id: Some(tenant.into()),
        max_attempts: 3,
        run_at: ms(at),
        priority,
        on_conflict: ConflictPolicy::Dedupe,
        traceparent: None,
        actor: None,
        unique_for: None,
        dependencies: None,
        now: ms(at),
    };
    driver.job_enqueue(&request).await.expect("enqueue").id
}

async fn claim(driver: &PostgresDriver, slots: u32, at: i64, visibility: Duration) -> Vec<Uuid> {
    let result: ClaimResult = driver
        .job_claim(&ClaimParams {
            demand: vec![QueueDemand {
                queue: QUEUE.into(),
                limit: slots,
            }],
            worker_id: "w1".into(),
            visibility_timeout: visibility,
            drop_exhausted: Vec::new(),
            fair_after: String::new(),
            now: ms(at),
        })
        .await
        .expect("claim");
    let mut ids: Vec<Uuid> = result.jobs.iter().map(|j| j.id).collect();
    ids.sort();
    ids
}

const LEASE: Duration = Duration::from_secs(30);

fn set(ids: &[Uuid]) -> HashSet<Uuid> {
    ids.iter().copied().collect()
}

#[tokio::test]
async fn a_tenant_another_process_enqueued_waits_one_known_claim_at_most() {
    let (claimer, other) = drivers("known_claim_new_tenant").await;
    let mut a = Vec::new();
    for n in 0..5 {
        a.push(enqueue(&other, "a", &format!("a{n}"), n).await);
    }
    // The first claim is full, the second searches from the floors: tenant "a" is known.
    assert_eq!(claim(&claimer, 1, 1_000, LEASE).await, vec![a[0]]);
    assert_eq!(claim(&claimer, 1, 1_010, LEASE).await, vec![a[1]]);

    let b = enqueue(&other, "b", "b0", 1_015).await;
    // A search would take one turn of each tenant (a2 and b0); the claim right after it reads
    // the known tenant alone ...
    assert_eq!(
        set(&claim(&claimer, 2, 1_020, LEASE).await),
        set(&[a[2], a[3]])
    );
    // ... and the next one searches again and finds "b" (past the short run of known claims).
    assert_eq!(
        set(&claim(&claimer, 2, 1_200, LEASE).await),
        set(&[a[4], b])
    );
}

#[tokio::test]
async fn a_known_claim_of_one_tenant_reads_later_classes_only_for_the_slots_left() {
    let (claimer, other) = drivers("known_claim_later_classes").await;
    let mut plain = Vec::new();
    for n in 0..4 {
        plain.push(enqueue(&other, "a", &format!("a{n}"), n).await);
    }
    let low = [
        enqueue_ranked(&other, "a", "l0", 4, -1).await,
        enqueue_ranked(&other, "a", "l1", 5, -1).await,
    ];
    let delayed = enqueue(&other, "a", "a-delayed", 5_000).await;
    // A full claim, then a claim from the floors: tenant "a" is known at its default class.
    assert_eq!(claim(&claimer, 1, 1_000, LEASE).await, vec![plain[0]]);
    assert_eq!(claim(&claimer, 1, 1_010, LEASE).await, vec![plain[1]]);
    // One slot: the floor's class fills it, the lower class is not read.
    assert_eq!(claim(&claimer, 1, 1_020, LEASE).await, vec![plain[2]]);
    // Two slots: the floor's class has one row due (its row not yet due is passed), so the
    // lower class gives the other, oldest first.
    assert_eq!(
        set(&claim(&claimer, 2, 1_030, LEASE).await),
        set(&[plain[3], low[0]])
    );
    assert_eq!(claim(&claimer, 3, 1_035, LEASE).await, vec![low[1]]);
    assert!(claim(&claimer, 4, 1_040, LEASE).await.is_empty());
    assert_eq!(claim(&claimer, 4, 5_000, LEASE).await, vec![delayed]);
}

#[tokio::test]
async fn an_empty_known_claim_searches_in_the_same_call() {
    let (claimer, other) = drivers("known_claim_empty").await;
    let a = enqueue(&other, "a", "a0", 0).await;
    assert_eq!(claim(&claimer, 1, 1_000, LEASE).await, vec![a]);
    assert!(claim(&claimer, 1, 1_010, LEASE).await.is_empty());
    // Tenant "a" has nothing left; "b" is new to the claimer's floors. The known-tenant claim
    // finds nothing, and the same call goes on to search, so a worker never idles on it.
    let b = enqueue(&other, "b", "b0", 1_015).await;
    assert_eq!(claim(&claimer, 1, 1_020, LEASE).await, vec![b]);
}

#[tokio::test]
async fn a_lapsed_lease_waits_one_known_claim_at_most() {
    let (claimer, other) = drivers("known_claim_lapse").await;
    let lapsing = enqueue(&other, "b", "b0", 0).await;
    let mut a = Vec::new();
    for n in 0..3 {
        a.push(enqueue(&other, "a", &format!("a{n}"), 1 + n).await);
    }
    // The full claim takes b0 (the oldest) on a 200 ms lease; the search after it takes a0 and
    // sees no lapsed lease yet.
    assert_eq!(
        claim(&claimer, 1, 1_000, Duration::from_millis(200)).await,
        vec![lapsing]
    );
    assert_eq!(claim(&claimer, 1, 1_010, LEASE).await, vec![a[0]]);
    // At 1,300 ms b0's lease has lapsed. A search would hand it out again beside a1; the known
    // claim after a quiet spell takes the known tenants' queued rows ...
    assert_eq!(
        set(&claim(&claimer, 2, 1_300, LEASE).await),
        set(&[a[1], a[2]])
    );
    // ... and the next claim searches and takes it back.
    assert_eq!(claim(&claimer, 2, 1_310, LEASE).await, vec![lapsing]);
}

#[tokio::test]
async fn known_claims_take_turns_and_an_own_enqueue_of_a_new_tenant_searches() {
    let (claimer, other) = drivers("known_claim_turns").await;
    let mut a = Vec::new();
    for n in 0..6 {
        a.push(enqueue(&other, "a", &format!("a{n}"), n).await);
    }
    let mut c = Vec::new();
    for n in 0..3 {
        c.push(enqueue(&other, "c", &format!("c{n}"), 10 + n).await);
    }
    assert_eq!(
        set(&claim(&claimer, 2, 1_000, LEASE).await),
        set(&[a[0], c[0]])
    );
    assert_eq!(
        set(&claim(&claimer, 2, 1_010, LEASE).await),
        set(&[a[1], c[1]])
    );
    // Turns across the known tenants: one of each, then the next of each, although a3 and a4
    // are older than c2.
    assert_eq!(
        set(&claim(&claimer, 3, 1_020, LEASE).await),
        set(&[a[2], c[2], a[3]])
    );
    // The claimer's own enqueue for a tenant its floors do not know: the next claim searches.
    let d = enqueue(&claimer, "d", "d0", 1_025).await;
    assert_eq!(
        set(&claim(&claimer, 2, 1_030, LEASE).await),
        set(&[a[4], d])
    );
}

#[tokio::test]
async fn a_paused_queue_yields_nothing_to_a_known_claim_of_one_tenant() {
    let (claimer, other) = drivers("known_claim_paused").await;
    let mut a = Vec::new();
    for n in 0..3 {
        a.push(enqueue(&other, "a", &format!("a{n}"), n).await);
    }
    assert_eq!(claim(&claimer, 1, 1_000, LEASE).await, vec![a[0]]);
    assert_eq!(claim(&claimer, 1, 1_010, LEASE).await, vec![a[1]]);
    let introspect = other.introspect().expect("introspection");
    introspect
        .queue_pause(&jobs::driver::introspect::QueuePauseParams {
            queue: QUEUE,
            actor: None,
            now: ms(1_015),
        })
        .await
        .expect("pause");
    // The claim right after a search reads the one known tenant alone (job_claim_one.sql):
    // it, and the search that follows its empty answer, take nothing from a paused queue.
    assert!(claim(&claimer, 1, 1_020, LEASE).await.is_empty());
    introspect
        .queue_resume(&jobs::driver::introspect::QueueResumeParams {
            queue: QUEUE,
            now: ms(1_025),
        })
        .await
        .expect("resume");
    assert_eq!(claim(&claimer, 1, 1_030, LEASE).await, vec![a[2]]);
}
