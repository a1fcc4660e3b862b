//! What must hold after a Redis chaos run, whatever broke, read from the queue (through the
//! driver: `job_get`, `step_list`, `queue_stats`) and from the side schema (the side effects
//! and the audit the worker processes' decorator wrote):
//!
//! - nothing acknowledged is lost: every id an enqueue answered is a job, in a final state;
//!   every job an ack landed on is there, final, its last claim the one the ack was fenced on;
//!   no claim began after an ack of its job had landed; no step closure (in a process still
//!   holding the job) began after a `completed` write of its step had landed (a server
//!   that lost an acknowledged write would run it again);
//! - no completed step runs again: no closure began after its step was stored completed (the
//!   closure asks the store first and records when it began) in a process still holding the
//!   job (a frozen process, thawed after its claim was taken over, may go on with a closure
//!   its runtime decided to run before: counted apart, `superseded_closures`, its writes
//!   fenced), and each later step's recorded input is the stored output of the step before it
//!   (a re-run would have replaced it);
//! - no claim ordinal of a job is handed out twice;
//! - no write lands from a worker that no longer holds the job: every landed ack, nack,
//!   heartbeat, progress or step write was fenced on a claim the same process and worker was
//!   handed, and none was asked after a later claim of its job had been answered.
//!
//! The SQL audits also prove every claim was logged and no claim took a row under an unlapsed
//! lease; here a claim whose answer was lost (a cut connection) is stamped on the row but never
//! reaches the process, so claims are only bounded (`unaudited_claims >= 0`), and the claim
//! script takes running rows only by their lapsed lease score.

use std::collections::{BTreeMap, BTreeSet};

use jobs::driver::{JobDriver, StepListParams, StepRecord, StepStatus};
use jobs::JobState;

use super::store::{is_final, RedisStore, Totals};
use crate::chaos::load::Ledger;

/// What the invariants came to, printed at the end of each run.
#[derive(Debug, Default)]
pub struct Counts {
    pub jobs: i64,
    pub enqueues_answer_lost: i64,
    pub done: i64,
    pub dead: i64,
    pub other_final: i64,
    pub unfinished: i64,
    pub missing: i64,
    pub step_executions: i64,
    pub interrupted_step_reruns: i64,
    pub completed_step_reruns: i64,
    pub late_asks: i64,
    pub superseded_closures: i64,
    pub reruns_after_landed_step: i64,
    pub changed_step_outputs: i64,
    pub done_without_three_steps: i64,
    pub claims: i64,
    pub claim_ordinals_reused: i64,
    pub unaudited_claims: i64,
    pub claims_after_landed_ack: i64,
    pub landed_writes: i64,
    pub acks: i64,
    pub retries: i64,
    pub step_writes: i64,
    pub heartbeats: i64,
    pub acked_missing_or_live: i64,
    pub acks_not_under_last_claim: i64,
    pub foreign_writes: i64,
    pub stale_writes: i64,
    pub attempts_max: i64,
}

/// One side-effect row of a step closure.
struct Effect {
    run_id: uuid::Uuid,
    step: String,
    saw: Option<String>,
    already_completed: bool,
    began_us: i64,
    /// Whether the closure began after a later claim of its job than its process's had been
    /// answered: its process no longer held the job (see [`SUPERSEDED`]).
    superseded: bool,
}

/// Whether side effect `e` began after a later claim of its job than the last its process had
/// been handed was answered: a frozen process, thawed, going on with a step its runtime decided
/// to run while it still held the claim (nothing can stop a process paused between that check
/// and the closure's first instruction). Its writes are fenced; the closure itself is counted
/// apart, as the SQL suites count a frozen worker's late ask.
const SUPERSEDED: &str = "exists (select 1 from {s}.claim_log d where d.job_id = e.job_id \
     and d.returned_us < e.began_us and d.claims > (select max(c.claims) from {s}.claim_log c \
     where c.job_id = e.job_id and c.app = e.app and c.returned_us < e.began_us))";

/// Reads every count the invariants need, and checks them.
pub async fn check(store: &RedisStore, ledger: &Ledger, what: &str) -> Counts {
    let (c, totals) = read(store, ledger).await;
    println!("{what}: {c:#?}");

    assert_eq!(c.missing, 0, "{what}: no enqueued job is lost");
    assert_eq!(c.unfinished, 0, "{what}: every job reaches a final state");
    assert_eq!(totals.live, 0, "{what}: no job of the queue is left live");
    assert!(
        c.enqueues_answer_lost >= 0,
        "{what}: fewer jobs in the queue than enqueues answered"
    );
    assert_eq!(
        c.acked_missing_or_live, 0,
        "{what}: a job whose ack landed is gone or live again"
    );
    assert_eq!(
        c.acks_not_under_last_claim, 0,
        "{what}: an ack landed under a claim that was not its job's last"
    );
    assert_eq!(
        c.claims_after_landed_ack, 0,
        "{what}: a job was claimed again after its ack landed (an acknowledged ack lost)"
    );
    assert_eq!(
        c.reruns_after_landed_step, 0,
        "{what}: a step ran again after its completion landed (an acknowledged step lost)"
    );
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
    assert!(
        c.unaudited_claims >= 0,
        "{what}: the audit logged claims the queue never stamped"
    );
    assert_eq!(
        c.foreign_writes, 0,
        "{what}: a write landed from a process or worker that was not handed the claim"
    );
    assert_eq!(
        c.stale_writes, 0,
        "{what}: a write landed though a later claim of its job had been answered before it"
    );
    c
}

/// Reads every count the invariants need.
pub async fn read(store: &RedisStore, ledger: &Ledger) -> (Counts, Totals) {
    let s = store.schema();
    let mut c = Counts::default();

    // The jobs: every id an enqueue answered, read through the driver.
    let mut rows = BTreeMap::new();
    for id in ledger.ids.keys() {
        match store.job(*id).await {
            Some(row) => {
                rows.insert(*id, row);
            }
            None => c.missing += 1,
        }
    }
    for row in rows.values() {
        match row.state {
            JobState::Done => c.done += 1,
            JobState::Dead => c.dead += 1,
            JobState::Failed | JobState::Cancelled => c.other_final += 1,
            _ => c.unfinished += 1,
        }
        c.attempts_max = c.attempts_max.max(i64::from(row.attempt));
    }
    let totals = store.totals().await.expect("the queue's counts");
    c.jobs = totals.all as i64;
    // A job beyond the ledger is an enqueue whose answer was lost with a cut connection.
    c.enqueues_answer_lost = c.jobs - rows.len() as i64;

    // The steps of every run a job of the ledger or a side effect names.
    let effects = effects(store).await;
    let mut runs: BTreeSet<uuid::Uuid> = rows.values().map(|r| r.run_id).collect();
    runs.extend(effects.iter().map(|e| e.run_id));
    let mut steps: BTreeMap<(uuid::Uuid, String), StepRecord> = BTreeMap::new();
    for run_id in runs {
        let stored = store
            .driver()
            .step_list(&StepListParams { run_id })
            .await
            .expect("read a run's steps");
        for step in stored {
            steps.insert((run_id, step.name.clone()), step);
        }
    }
    let completed = |run_id: uuid::Uuid, name: &str| {
        steps
            .get(&(run_id, name.to_string()))
            .filter(|s| s.status == StepStatus::Completed)
    };
    c.step_executions = effects.len() as i64;
    let distinct: BTreeSet<(uuid::Uuid, &str)> = effects
        .iter()
        .map(|e| (e.run_id, e.step.as_str()))
        .collect();
    c.interrupted_step_reruns = c.step_executions - distinct.len() as i64;
    c.late_asks = effects.iter().filter(|e| e.already_completed).count() as i64;
    c.superseded_closures = effects.iter().filter(|e| e.superseded).count() as i64;
    c.completed_step_reruns = effects
        .iter()
        .filter(|e| {
            e.already_completed
                && !e.superseded
                && completed(e.run_id, &e.step)
                    .is_some_and(|t| t.updated_at.timestamp_micros() < e.began_us)
        })
        .count() as i64;
    // A later step saw the earlier step's output; the stored output must still be that one.
    c.changed_step_outputs = effects
        .iter()
        .filter_map(|e| {
            let before = match e.step.as_str() {
                "s2" => "s1",
                "s3" => "s2",
                _ => return None,
            };
            let stored = completed(e.run_id, before)
                .and_then(|t| t.output.as_ref())
                .and_then(|o| o.as_str().map(str::to_string));
            Some(stored != e.saw)
        })
        .filter(|changed| *changed)
        .count() as i64;
    c.done_without_three_steps = rows
        .values()
        .filter(|r| r.state == JobState::Done && r.name == "chaos_steps")
        .filter(|r| {
            ["s1", "s2", "s3"]
                .iter()
                .filter(|n| completed(r.run_id, n).is_some())
                .count()
                != 3
        })
        .count() as i64;

    // The audit.
    let count = |sql: String| async move { store.count(&sql).await };
    c.claims = count(format!("select count(*) from {s}.claim_log")).await;
    c.claim_ordinals_reused = count(format!(
        "select count(*) from (select 1 from {s}.claim_log \
         group by job_id, claims having count(*) > 1) d"
    ))
    .await;
    // Every claim ordinal a ledger job reached, less the claims of it the audit logged: the
    // claims whose answer never reached a process (or whose process died before logging).
    let ledger_ids: Vec<uuid::Uuid> = rows.keys().copied().collect();
    let audited_of_ledger: i64 = jobs::sqlx::query_scalar(jobs::sqlx::AssertSqlSafe(format!(
        "select count(*) from {s}.claim_log where job_id = any($1)"
    )))
    .bind(&ledger_ids)
    .fetch_one(store.pool())
    .await
    .expect("count the audited claims");
    c.unaudited_claims = rows.values().map(|r| r.claims).sum::<i64>() - audited_of_ledger;
    c.claims_after_landed_ack = count(format!(
        "select count(*) from {s}.claim_log c join {s}.settle_log a \
         on a.job_id = c.job_id and a.kind = 'ack' where c.began_us > a.landed_us"
    ))
    .await;
    c.reruns_after_landed_step = count(format!(
        "select count(*) from {s}.side_effects e join {s}.settle_log w \
         on w.run_id = e.run_id and w.step = e.step and w.kind = 'step' \
         and w.detail = 'completed' where e.began_us > w.landed_us and not {}",
        SUPERSEDED.replace("{s}", s)
    ))
    .await;
    c.landed_writes = count(format!("select count(*) from {s}.settle_log")).await;
    c.acks = count(format!(
        "select count(*) from {s}.settle_log where kind = 'ack'"
    ))
    .await;
    c.retries = count(format!(
        "select count(*) from {s}.settle_log where kind = 'nack' and detail in ('ready', 'delayed')"
    ))
    .await;
    c.step_writes = count(format!(
        "select count(*) from {s}.settle_log where kind = 'step'"
    ))
    .await;
    c.heartbeats = count(format!(
        "select count(*) from {s}.settle_log where kind = 'heartbeat'"
    ))
    .await;
    // Every job an ack landed on is there, final, and was never claimed again: the claim the
    // ack was fenced on is the job's last (a later ordinal means the ack was lost, or landed
    // on a row a later claim held).
    let acked: Vec<(uuid::Uuid, i64)> = jobs::sqlx::query_as(jobs::sqlx::AssertSqlSafe(format!(
        "select job_id, claims from {s}.settle_log where kind = 'ack'"
    )))
    .fetch_all(store.pool())
    .await
    .expect("the acked jobs");
    for (id, claim) in acked {
        let row = match rows.get(&id) {
            Some(row) => Some(row.clone()),
            None => store.job(id).await,
        };
        match row {
            Some(row) if is_final(row.state) => {
                if row.claims != claim {
                    c.acks_not_under_last_claim += 1;
                }
            }
            _ => c.acked_missing_or_live += 1,
        }
    }
    c.foreign_writes = count(format!(
        "select count(*) from {s}.settle_log w where not exists (select 1 from {s}.claim_log c \
         where c.job_id = w.job_id and c.claims = w.claims and c.app = w.app \
         and c.worker = w.worker)"
    ))
    .await;
    c.stale_writes = count(format!(
        "select count(*) from {s}.settle_log w where exists (select 1 from {s}.claim_log c \
         where c.job_id = w.job_id and c.claims > w.claims and c.returned_us < w.began_us)"
    ))
    .await;
    (c, totals)
}

/// The step closures' side effects (`s1`, `s2`, `s3`).
async fn effects(store: &RedisStore) -> Vec<Effect> {
    let s = store.schema();
    let rows: Vec<(uuid::Uuid, String, Option<String>, bool, i64, bool)> =
        jobs::sqlx::query_as(jobs::sqlx::AssertSqlSafe(format!(
            "select run_id, step, saw, already_completed, began_us, {} from {s}.side_effects e \
             where step in ('s1', 's2', 's3')",
            SUPERSEDED.replace("{s}", s)
        )))
        .fetch_all(store.pool())
        .await
        .expect("the side effects");
    rows.into_iter()
        .map(
            |(run_id, step, saw, already_completed, began_us, superseded)| Effect {
                run_id,
                step,
                saw,
                already_completed,
                began_us,
                superseded,
            },
        )
        .collect()
}
