//! What must hold after a chaos run, whatever broke, read from the queue and the audit:
//!
//! - every job reaches a final state, and none is lost (every id an enqueue answered is a row);
//! - no completed step runs again: no step closure begins after its step was stored completed
//!   (each closure records when it began, and whether the store already held its step
//!   completed when it asked), and each later step records the output of the step before it,
//!   which must equal the stored output (a re-run would have replaced it). A closure that
//!   began inside its claim and was paused before it asked (a frozen worker's) asks late and
//!   finds the step completed by the worker that took the row over: counted apart, as
//!   `late_asks`, since nothing can stop a closure already under way;
//! - no row is taken twice: no claim ordinal is handed out twice, and no claim takes a row
//!   still running under a lease that has not lapsed; every claim is in the audit;
//! - no settle lands from a worker that no longer holds the row: the claim and the settle of
//!   one claim ordinal come from the same process;
//! - one live row per idempotency key.

use super::load::Ledger;
use crate::support::store::Store;

/// Keys (name, key) held by more than one live row right now.
pub async fn live_duplicates(store: &Store) -> i64 {
    let s = store.schema();
    store
        .count(&format!(
            "select count(*) from (select 1 from {s}.x_jobs \
             where state in ('ready', 'delayed', 'running', 'suspended') \
             group by name, coalesce(tenant_id, ''), idempotency_key having count(*) > 1) d"
        ))
        .await
}

/// Jobs not yet in a final state.
pub async fn unfinished(store: &Store) -> i64 {
    let s = store.schema();
    store
        .count(&format!(
            "select count(*) from {s}.x_jobs where state not in ('done', 'failed', 'dead', 'cancelled')"
        ))
        .await
}

/// What the invariants came to, printed at the end of each run.
#[derive(Debug, Default)]
pub struct Counts {
    pub jobs: i64,
    pub done: i64,
    pub dead: i64,
    pub other_final: i64,
    pub unfinished: i64,
    pub missing: i64,
    pub step_executions: i64,
    pub interrupted_step_reruns: i64,
    pub completed_step_reruns: i64,
    pub late_asks: i64,
    pub changed_step_outputs: i64,
    pub done_without_three_steps: i64,
    pub claims: i64,
    pub claim_ordinals_reused: i64,
    pub stolen_claims: i64,
    pub unaudited_claims: i64,
    pub settles: i64,
    pub retry_settles: i64,
    pub lapsed_settles_by_holder: i64,
    pub buried: i64,
    pub foreign_settles: i64,
    pub attempts_max: i64,
}

/// Whether every enqueue's answer reached the test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answers {
    /// Every enqueue was answered: the queue holds exactly the jobs the ledger names.
    AllReached,
    /// Some enqueues failed (their connection cut, perhaps after the commit): the queue may
    /// also hold jobs no answer named, each under a key in [`Ledger::unanswered`] (Postgres).
    SomeLost,
}

/// Reads every count the invariants need, and checks them.
pub async fn check(store: &Store, ledger: &Ledger, what: &str) -> Counts {
    check_with(store, ledger, what, Answers::AllReached).await
}

/// [`check`], for a load whose enqueues may have lost their answers (`answers`).
pub async fn check_with(store: &Store, ledger: &Ledger, what: &str, answers: Answers) -> Counts {
    let s = store.schema();
    let count = |sql: String| async move { store.count(&sql).await };
    let stored = store.job_ids().await;
    let output = store.json_text("p.output");
    let completed_us = store.epoch_us("t.updated_at");
    let c = Counts {
        jobs: stored.len() as i64,
        done: count(format!(
            "select count(*) from {s}.x_jobs where state = 'done'"
        ))
        .await,
        dead: count(format!(
            "select count(*) from {s}.x_jobs where state = 'dead'"
        ))
        .await,
        other_final: count(format!(
            "select count(*) from {s}.x_jobs where state in ('failed', 'cancelled')"
        ))
        .await,
        unfinished: unfinished(store).await,
        missing: ledger.ids.keys().filter(|id| !stored.contains(id)).count() as i64,
        step_executions: count(format!(
            "select count(*) from {s}.side_effects where step like 's_'"
        ))
        .await,
        interrupted_step_reruns: count(format!(
            "select cast(coalesce(sum(n - 1), 0) as bigint) from (select count(*) n \
             from {s}.side_effects where step like 's_' group by run_id, step) r"
        ))
        .await,
        completed_step_reruns: count(format!(
            "select count(*) from {s}.side_effects e where e.already_completed and exists \
             (select 1 from {s}.x_job_steps t where t.run_id = e.run_id and t.name = e.step \
              and t.status = 'completed' and {completed_us} < e.began_us)"
        ))
        .await,
        late_asks: count(format!(
            "select count(*) from {s}.side_effects where already_completed"
        ))
        .await,
        // A later step saw the earlier step's output; the stored output must still be that one.
        changed_step_outputs: count(format!(
            "select count(*) from {s}.side_effects e \
             join {s}.x_job_steps p on p.run_id = e.run_id \
              and p.name = case e.step when 's2' then 's1' when 's3' then 's2' end \
             where e.step in ('s2', 's3') and {output} is distinct from e.saw"
        ))
        .await,
        done_without_three_steps: count(format!(
            "select count(*) from {s}.x_jobs j where j.state = 'done' and j.name = 'chaos_steps' \
             and (select count(*) from {s}.x_job_steps t \
                  where t.run_id = j.run_id and t.status = 'completed') <> 3"
        ))
        .await,
        claims: count(format!("select count(*) from {s}.claim_log")).await,
        claim_ordinals_reused: count(format!(
            "select count(*) from (select 1 from {s}.claim_log \
             group by job_id, claims having count(*) > 1) d"
        ))
        .await,
        stolen_claims: count(format!("select count(*) from {s}.claim_log where stolen")).await,
        // Every claim ordinal a row reached is one claim the audit logged.
        unaudited_claims: count(format!(
            "select cast(coalesce(sum(claims), 0) as bigint) \
             - (select count(*) from {s}.claim_log) from {s}.x_jobs"
        ))
        .await,
        settles: count(format!(
            "select count(*) from {s}.settle_log where kind = 'settle'"
        ))
        .await,
        retry_settles: count(format!(
            "select count(*) from {s}.settle_log where kind = 'settle' \
             and state in ('ready', 'delayed')"
        ))
        .await,
        lapsed_settles_by_holder: count(format!(
            "select count(*) from {s}.settle_log where kind = 'settle' and lapsed"
        ))
        .await,
        buried: count(format!(
            "select count(*) from {s}.settle_log where kind = 'buried'"
        ))
        .await,
        foreign_settles: count(format!(
            "select count(*) from {s}.settle_log where kind = 'settle' and \
             (claimer_app is distinct from settler_app or claimer_worker is distinct from worker)"
        ))
        .await,
        attempts_max: count(format!(
            "select cast(coalesce(max(attempt), 0) as bigint) from {s}.x_jobs"
        ))
        .await,
    };
    println!("{what}: {c:#?}");

    assert_eq!(c.unfinished, 0, "{what}: every job reaches a final state");
    assert_eq!(c.missing, 0, "{what}: no enqueued job is lost");
    match answers {
        Answers::AllReached => assert_eq!(
            c.jobs,
            ledger.ids.len() as i64,
            "{what}: exactly the jobs enqueued"
        ),
        Answers::SomeLost => {
            // Every job no answer named was asked for under a key whose enqueue failed.
            let keys = unanswered_keys(store, ledger).await;
            let unasked: Vec<&String> = keys
                .iter()
                .filter(|key| {
                    key.strip_prefix("chaos:")
                        .and_then(|n| n.parse::<u64>().ok())
                        .is_none_or(|n| !ledger.unanswered.contains(&n))
                })
                .collect();
            assert!(
                unasked.is_empty(),
                "{what}: jobs no enqueue answered, under keys no failed enqueue asked for: \
                 {unasked:?}"
            );
        }
    }
    assert_eq!(
        c.completed_step_reruns, 0,
        "{what}: a step closure ran while its step was already completed"
    );
    assert_eq!(
        c.changed_step_outputs, 0,
        "{what}: a completed step's output changed after a later step read it"
    );
    assert_eq!(
        c.done_without_three_steps, 0,
        "{what}: a done run lacks a step"
    );
    assert_eq!(
        c.claim_ordinals_reused, 0,
        "{what}: one claim ordinal handed out twice"
    );
    assert_eq!(
        c.stolen_claims, 0,
        "{what}: a claim took a row whose lease had not lapsed"
    );
    assert_eq!(c.unaudited_claims, 0, "{what}: a claim escaped the audit");
    assert_eq!(
        c.foreign_settles, 0,
        "{what}: a settle landed from a process that did not hold the claim"
    );
    assert_eq!(
        live_duplicates(store).await,
        0,
        "{what}: one live row per key"
    );
    c
}

/// The idempotency keys of the jobs in the queue that no enqueue's answer named.
async fn unanswered_keys(store: &Store, ledger: &Ledger) -> Vec<String> {
    let s = store.schema();
    let rows: Vec<(uuid::Uuid, String)> = jobs::sqlx::query_as(jobs::sqlx::AssertSqlSafe(format!(
        "select id, idempotency_key from {s}.x_jobs"
    )))
    .fetch_all(store.pg_pool())
    .await
    .expect("read the jobs' keys");
    rows.into_iter()
        .filter(|(id, _)| !ledger.ids.contains_key(id))
        .map(|(_, key)| key)
        .collect()
}
