//! The driver conformance suite: one set of cases every
//! [`JobDriver`] must pass, run unchanged against the memory and the
//! Postgres driver (River's `riverdrivertest`), and a third-party driver's own tests.
//!
//! Each case is an `async fn case(driver: Arc<dyn JobDriver>)` that asserts, in one file per
//! area ([`job_enqueue`], [`job_unique`], [`job_dependencies`], [`job_groups`], [`job_claim`], [`job_settle`],
//! [`job_result`], [`job_purge`], [`step`], [`event`], [`event_purge`],
//! [`lease`], [`scheduler`], [`backfill_store`], [`ledger_book`], [`webhook_ledger`],
//! [`introspect`], [`job_history`], [`limits`], [`rate`], [`next_due`],
//! [`worker`]), named method then behaviour (`job_claim_never_hands_one_row_to_two_claimers`,
//! `job_ack_is_fenced_on_the_claim`). Port cases call the driver directly with explicit `now`
//! values, so no clock is needed; worker cases drive a [`Worker`](crate::Worker) with
//! `tick()` over a [`TestClock`](crate::clock::TestClock).
//!
//! [`conformance_suite!`](crate::conformance_suite) expands one `#[tokio::test]` per case for a
//! driver factory; a driver's test file invokes it once. Every case gets a fresh driver from
//! the factory (for Postgres, a fresh schema), so the cases run in parallel. A case that needs
//! a capability the driver lacks (a lease store, a scheduler store, the operator port) fails
//! and names it: no case passes by skipping.
//!
//! ```ignore
//! // tests/stores/driver_memory.rs
//! use std::sync::Arc;
//! use jobs::driver::MemoryDriver;
//!
//! jobs::conformance_suite!(async { Arc::new(MemoryDriver::new()) });
//!
//! // tests/stores/driver_postgres.rs: the factory may take the case's name (for its schema).
//! jobs::conformance_suite!(|case| support::pg::driver(case));
//! ```

pub mod backfill_store;
pub mod event;
pub mod event_purge;
pub mod introspect;
pub mod job_claim;
pub mod job_dependencies;
pub mod job_enqueue;
pub mod job_groups;
pub mod job_history;
pub mod job_purge;
pub mod job_result;
pub mod job_settle;
pub mod job_unique;
pub mod lease;
pub mod ledger_book;
pub mod limits;
pub mod next_due;
pub mod outbox;
pub mod rate;
pub mod scheduler;
pub mod step;
pub mod store_check;
pub mod tenancy;
pub mod webhook_ledger;
pub mod worker;

/// The `sqlx` the Postgres driver is built on, for test harnesses that make its pools and
/// schemas (a direct `sqlx` dev-dependency of the tests would change the paths rustc prints in
/// the trybuild `.stderr` files).
#[cfg(feature = "postgres")]
#[doc(hidden)]
pub use sqlx;

use std::fmt::Debug;
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::driver::{JobDriver, JobGetParams, QueueStatsParams};
use crate::error::{ErrorCode, JobError};

/// How long one case may take in real time before it is reported as hung.
pub const CASE_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs one case under [`CASE_TIMEOUT`]. Not public API: what [`conformance_suite!`] expands
/// to.
///
/// [`conformance_suite!`]: crate::conformance_suite
#[doc(hidden)]
pub async fn run_case<F>(name: &str, case: F)
where
    F: std::future::Future<Output = ()>,
{
    if tokio::time::timeout(CASE_TIMEOUT, case).await.is_err() {
        panic!("conformance case `{name}` did not finish within {CASE_TIMEOUT:?}");
    }
}

/// The cases, in one list: `conformance_suite!` expands one test per entry.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_cases {
    ($callback:ident ! { $($args:tt)* }) => {
        $crate::$callback! { @cases { $($args)* }
            lease::lease_acquire_grants_up_to_the_limit_with_increasing_fences,
            lease::lease_acquire_takes_over_a_lapsed_slot,
            lease::lease_renew_extends_and_release_frees,
            lease::lease_holders_lists_live_grants_in_slot_order,
            lease::lease_acquire_never_over_grants_under_concurrent_acquirers,
            job_purge::job_purge_deletes_finished_rows_past_their_windows,
            job_purge::job_purge_is_bounded_by_its_limit,
            job_enqueue::job_enqueue_answers_the_ids_it_was_given,
            job_enqueue::job_enqueue_in_the_future_is_delayed,
            job_enqueue::job_enqueue_dedupes_a_live_key,
            job_enqueue::job_enqueue_frees_the_key_once_finished,
            job_enqueue::job_enqueue_namespaces_keys_by_name_and_tenant,
            job_enqueue::job_enqueue_dedupes_by_id,
            job_enqueue::job_enqueue_refuses_a_live_key_under_conflict_error,
            job_enqueue::job_enqueue_of_an_existing_id_answers_it_whatever_the_policy,
            job_enqueue::job_enqueue_many_answers_each_request,
            job_enqueue::job_enqueue_many_is_all_or_nothing,
            job_enqueue::job_enqueue_replace_gives_a_queued_holder_the_latest_input_and_time,
            job_enqueue::job_enqueue_replace_leaves_a_started_holder_and_is_all_or_nothing_in_a_batch,
            job_enqueue::job_enqueue_of_one_key_from_many_tasks_inserts_one_row,
            job_enqueue::job_enqueue_many_stores_jobs_due_at_the_batch_now_ready,
            job_enqueue::job_enqueue_many_through_the_client_lists_every_due_job_ready,
            job_dependencies::job_dependencies_wait_for_every_dependency,
            job_dependencies::job_dependencies_failure_cancels_or_runs_by_policy,
            job_dependencies::job_dependencies_follow_a_cancelled_dependency,
            job_dependencies::job_dependencies_are_checked_at_enqueue,
            job_dependencies::job_dependencies_span_queues,
            job_groups::job_group_counts_each_settle_and_wakes_the_parked_waiter_once,
            job_groups::job_group_join_counts_settled_members_and_the_wake_after_a_park,
            job_groups::job_group_batch_stays_open_until_closed_and_pages_in_order,
            job_groups::job_cancel_takes_the_children_of_a_parent_with_it,
            job_groups::worker_invoke_resumes_the_parent_once_with_every_outcome,
            job_groups::worker_invoke_first_timeout_and_cancel_both_ways,
            job_groups::worker_batch_callback_runs_once_after_the_closed_batch_settled,
            job_unique::job_unique_period_answers_a_finished_holder,
            job_unique::job_unique_period_ends_at_creation_plus_the_period,
            job_unique::job_unique_lapsed_marks_block_nothing_and_batches_keep_the_rule,
            job_unique::job_unique_requeue_keeps_the_holders_of_a_period,
            job_unique::job_unique_period_holds_against_a_fire,
            job_unique::job_unique_purge_frees_the_key_with_the_row,
            store_check::store_check_finds_no_pending_migration_once_migrated,
            job_claim::job_claim_refuses_empty_demand,
            job_claim::job_claim_marks_rows_running_under_the_claim,
            job_claim::job_claim_takes_due_rows_oldest_run_at_first,
            job_claim::job_claim_skips_rows_not_yet_due,
            job_claim::job_claim_takes_turns_across_tenants,
            job_claim::job_claim_takes_the_higher_priority_first,
            job_claim::job_claim_passes_rows_not_yet_due_in_every_class,
            job_claim::job_claim_takes_turns_across_tenants_before_priorities,
            job_claim::job_claim_respects_each_queue_limit,
            job_claim::job_claim_never_hands_one_row_to_two_claimers,
            job_claim::job_claim_redelivers_a_running_row_after_its_visibility_timeout,
            job_claim::job_claim_counts_lapsed_and_queued_rows_against_one_limit,
            job_claim::job_claim_buries_a_lapsed_final_attempt_dead,
            job_claim::job_claim_buries_a_lapsed_final_attempt_failed_for_dropped_names,
            job_claim::job_claim_buries_without_spending_demand,
            job_claim::job_claim_with_no_slot_buries_and_hands_out_nothing,
            job_claim::job_claim_takes_a_suspended_row_once_due,
            job_claim::job_claim_says_which_runs_have_steps,
            next_due::queue_next_due_answers_each_queue_s_earliest_later_run_time,
            job_settle::job_ack_settles_done,
            job_settle::job_ack_is_fenced_on_the_claim,
            job_settle::job_ack_clears_an_earlier_attempts_error,
            job_settle::job_nack_is_fenced_on_the_claim,
            job_settle::job_nack_sends_each_target_to_its_state,
            job_settle::job_nack_hands_the_attempt_back_when_not_counted,
            job_settle::job_nack_and_delayed_enqueue_announce_their_due_times,
            job_settle::job_heartbeat_extends_the_claim,
            job_settle::job_heartbeat_is_fenced_on_the_claim,
            job_settle::job_progress_records_progress_and_is_fenced,
            job_settle::job_cancel_cancels_a_queued_job_and_frees_its_key,
            job_settle::job_cancel_stops_a_running_job_at_its_next_heartbeat,
            job_settle::job_cancel_refuses_finished_and_unknown_jobs,
            job_settle::job_get_answers_none_for_an_unknown_id,
            job_settle::queue_stats_counts_each_queue_per_state,
            job_result::job_ack_keeps_the_result_it_carries,
            job_result::job_ack_many_keeps_each_result_and_none_for_a_stale_claim,
            job_result::job_ack_under_a_lapsed_claim_keeps_no_result,
            job_result::job_requeue_clears_the_kept_result,
            job_result::job_purge_takes_the_result_with_the_row,
            job_result::worker_keeps_a_declared_result_and_refuses_one_over_the_limit,
            step::step_put_then_list_round_trips,
            step::step_put_overwrites_by_name,
            step::step_put_is_fenced_on_the_claim,
            step::step_list_is_per_run,
            event::event_find_matches_an_event_published_after_the_mark,
            event::event_find_ignores_an_event_published_before_the_mark,
            event::event_find_ignores_an_expired_event,
            event::event_find_ignores_another_key_or_name,
            event::event_find_answers_the_first_event_after_the_mark,
            event::event_publish_wakes_a_suspended_job_waiting_on_it,
            event_purge::event_purge_deletes_expired_events_and_keeps_live_ones,
            event_purge::event_purge_is_bounded_by_its_limit,
            worker::worker_runs_steps_and_a_sleep_to_done,
            worker::worker_retries_then_dead_letters,
            worker::worker_resumes_a_wait_when_its_event_is_published,
            worker::worker_discards_a_job_not_started_within_its_expiry,
            limits::limits_refuse_oversized_keys_tenants_queues_and_names_before_any_write,
            limits::limits_refuse_nul_in_keys_tenants_queues_and_inputs_before_any_write,
            limits::limits_accept_every_value_at_its_limit,
            limits::limits_refuse_a_whole_enqueue_many_batch_for_one_bad_input,
            limits::limits_refuse_event_names_keys_and_payloads_before_any_write,
            limits::limits_refuse_step_names_outputs_waits_and_notes_without_writing_a_step,
            limits::limits_store_an_error_message_holding_nul,
            limits::limits_refuse_a_lock_key_over_its_limit,
            rate::rate_limit_holds_every_window_across_workers,
            rate::rate_limit_per_key_counts_each_key_apart,
            rate::queue_rate_holds_every_window_across_workers,
            rate::queue_cap_holds_across_workers_and_spends_no_rate,
            limits::limits_refuse_a_priority_out_of_range_before_any_write,
            tenancy::tenancy_actor_round_trips_on_every_path_in,
            tenancy::tenancy_refuses_a_cross_tenant_enqueue_unless_it_says_so,
            tenancy::tenancy_refuses_an_actor_out_of_bounds_before_any_write,
            introspect::job_list_pages_newest_first_both_ways,
            introspect::job_list_merges_every_state_newest_first,
            introspect::job_list_filters_by_every_field,
            introspect::job_list_refuses_bad_limits_and_foreign_cursors,
            introspect::job_remove_deletes_the_row_and_its_steps,
            introspect::job_requeue_refuses_live_unknown_and_held_keys,
            introspect::job_requeue_from_step_forgets_it_and_later_steps,
            introspect::job_promote_makes_a_waiting_job_due,
            introspect::job_requeue_and_promote_keep_the_priority,
            introspect::job_bulk_verbs_refuse_states_they_cannot_move,
            introspect::job_bulk_verbs_move_at_most_a_thousand_rows,
            introspect::job_requeue_many_leaves_held_keys_and_takes_the_oldest,
            introspect::queue_pause_stops_the_next_claim,
            introspect::worker_rows_expire_and_are_forgotten,
            introspect::counters_move_with_the_settle,
            introspect::counters_count_a_batched_ack_and_a_burial,
            introspect::counters_rollup_folds_buckets_into_the_next_tier,
            job_history::job_history_records_each_verb_with_its_actor,
            job_history::job_history_records_one_row_per_job_a_bulk_verb_moves,
            job_history::job_history_of_a_tenant_scoped_operator_shows_only_its_tenant,
            job_history::job_purge_deletes_the_history_of_the_jobs_it_purges,
            job_history::job_history_refuses_an_actor_out_of_bounds_before_any_write,
            scheduler::scheduler_leader_names_the_holder_since_it_took_the_lease,
            scheduler::scheduler_fire_carries_each_job_s_priority,
            backfill_store::backfill_begin_adopts_its_run_and_skips_after_a_completed_pass,
            backfill_store::backfill_store_answers_migrations_and_keeps_consumer_laps,
            ledger_book::posting_write_stores_a_key_once_per_tenant,
            webhook_ledger::webhook_record_moves_the_failure_run_per_endpoint,
            webhook_ledger::webhook_disable_holds_until_enable,
            webhook_ledger::webhook_record_loses_no_count_under_concurrent_records,
            webhook_ledger::webhook_attempts_purge_deletes_old_attempts_in_bounded_batches,
        }
    };
}

/// Expands the conformance suite for a driver factory: one `#[tokio::test]` per case, each on a
/// fresh driver.
///
/// The factory is an expression evaluating to a future of a driver (anything that coerces to
/// `Arc<dyn JobDriver>`), evaluated once per case. The `|case| factory` form binds the case's
/// name (`&'static str`), e.g. to name a Postgres schema after it. The test crate needs `tokio`
/// (with `macros` and `rt-multi-thread`).
///
/// ```ignore
/// jobs::conformance_suite!(async { std::sync::Arc::new(jobs::driver::MemoryDriver::new()) });
/// jobs::conformance_suite!(|case| support::pg::driver(case));
/// ```
#[macro_export]
macro_rules! conformance_suite {
    (@cases { $case_name:ident => $factory:expr } $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                let $case_name: &'static str = ::core::stringify!($case);
                $crate::conformance::run_case($case_name, async move {
                    let driver: ::std::sync::Arc<dyn $crate::driver::JobDriver> = $factory.await;
                    $crate::conformance::$module::$case(driver).await;
                })
                .await;
            }
        )*
    };
    (| $case_name:ident | $factory:expr $(,)?) => {
        $crate::__conformance_cases!(conformance_suite! { $case_name => $factory });
    };
    ($factory:expr $(,)?) => {
        $crate::__conformance_cases!(conformance_suite! { _case => $factory });
    };
}

// ---------------------------------------------------------------------------------------------
// Shared fixtures: explicit times, requests and claims, so each case reads as its rule.

/// The cases' epoch: 2030-01-01T00:00:00Z (whole seconds: Postgres keeps microseconds).
pub(crate) fn t0() -> Timestamp {
    DateTime::parse_from_rfc3339("2030-01-01T00:00:00Z")
        .expect("valid literal")
        .with_timezone(&Utc)
}

/// `t0 + secs`.
pub(crate) fn at(secs: i64) -> Timestamp {
    t0() + chrono::Duration::seconds(secs)
}

/// The queue most cases use.
pub(crate) const QUEUE: &str = "conformance";

/// The visibility timeout claims take.
pub(crate) const VISIBILITY: Duration = Duration::from_secs(30);

/// A due request for job `name` under `key` on [`QUEUE`], 3 attempts, at `t0`.
pub(crate) fn request(name: &str, key: &str) -> EnqueueRequest {
    EnqueueRequest {
        id: Uuid::now_v7(),
        run_id: Uuid::now_v7(),
        name: name.to_string(),
        queue: QUEUE.to_string(),
        input: serde_json::json!({ "key": key, "nested": { "n": 1, "list": [1, 2, 3] } }),
        idempotency_key: key.to_string(),
        tenant_id: None,
        max_attempts: 3,
        run_at: t0(),
        priority: DEFAULT_PRIORITY,
        on_conflict: ConflictPolicy::Dedupe,
        traceparent: None,
        actor: None,
        unique_for: None,
        dependencies: None,
        now: t0(),
    }
}

/// Enqueues, panicking on a refusal.
pub(crate) async fn enqueue(driver: &dyn JobDriver, request: &EnqueueRequest) -> EnqueueResult {
    driver
        .job_enqueue(request)
        .await
        .unwrap_or_else(|e| panic!("enqueue of `{}` refused: {e}", request.idempotency_key))
}

/// Enqueues a fresh due job under `key` and answers its id.
pub(crate) async fn enqueue_key(driver: &dyn JobDriver, key: &str) -> JobId {
    enqueue(driver, &request("conformance.job", key)).await.id
}

/// A claim of up to `limit` from [`QUEUE`] by `worker` at `now`.
pub(crate) fn claim_params(worker: &str, limit: u32, now: Timestamp) -> ClaimParams {
    ClaimParams {
        demand: vec![QueueDemand {
            queue: QUEUE.to_string(),
            limit,
        }],
        worker_id: worker.into(),
        visibility_timeout: VISIBILITY,
        drop_exhausted: Vec::new(),
        fair_after: String::new(),
        now,
    }
}

/// Claims, panicking on an error.
pub(crate) async fn claim(driver: &dyn JobDriver, params: &ClaimParams) -> ClaimResult {
    driver
        .job_claim(params)
        .await
        .unwrap_or_else(|e| panic!("claim failed: {e}"))
}

/// Claims exactly one job from [`QUEUE`] by `worker` at `now`.
pub(crate) async fn claim_one(driver: &dyn JobDriver, worker: &str, now: Timestamp) -> ClaimedJob {
    let mut result = claim(driver, &claim_params(worker, 1, now)).await;
    assert_eq!(
        result.jobs.len(),
        1,
        "expected one claimable job at {now}, got {:?}",
        result.jobs.iter().map(|j| j.id).collect::<Vec<_>>()
    );
    result.jobs.remove(0)
}

/// Claims nothing from [`QUEUE`] at `now`.
pub(crate) async fn claim_none(driver: &dyn JobDriver, worker: &str, now: Timestamp) {
    let result = claim(driver, &claim_params(worker, 10, now)).await;
    assert!(
        result.jobs.is_empty(),
        "expected nothing claimable at {now}, got {:?}",
        result.jobs.iter().map(|j| j.id).collect::<Vec<_>>()
    );
}

/// A completed step of `run_id` named `name`, with `output`, written at `now`.
pub(crate) fn completed_step_record(
    run_id: RunId,
    name: &str,
    output: serde_json::Value,
    now: Timestamp,
) -> StepRecord {
    StepRecord {
        run_id,
        name: name.to_string(),
        status: StepStatus::Completed,
        output: Some(output),
        error: None,
        attempts: 1,
        wake_at: None,
        wait: None,
        updated_at: now,
    }
}

/// The fence of `job`'s claim, as its step writes carry it.
pub(crate) fn step_fence(job: &ClaimedJob) -> StepFence {
    StepFence {
        job_id: job.id,
        by: job.by.clone(),
    }
}

/// One job's row, which must exist.
pub(crate) async fn get(driver: &dyn JobDriver, id: JobId) -> JobRecord {
    driver
        .job_get(&JobGetParams { id })
        .await
        .unwrap_or_else(|e| panic!("job_get failed: {e}"))
        .unwrap_or_else(|| panic!("no job with id {id}"))
}

/// Acks `job` at `now`, answering whether it landed.
pub(crate) async fn ack(
    driver: &dyn JobDriver,
    job: JobId,
    by: &ClaimIdentity,
    now: Timestamp,
) -> bool {
    driver
        .job_ack(&AckParams {
            job_id: job,
            by: by.clone(),
            result: None,
            now,
        })
        .await
        .unwrap_or_else(|e| panic!("ack failed: {e}"))
}

/// A counted nack of `job` to `target`, due again at `run_at`.
pub(crate) fn nack_params(
    job: JobId,
    by: &ClaimIdentity,
    target: NackTarget,
    run_at: Timestamp,
    now: Timestamp,
) -> NackParams {
    NackParams {
        job_id: job,
        by: by.clone(),
        target,
        run_at,
        counts_as_attempt: true,
        error: Some(format!("X_INVARIANT: nacked to {target:?}")),
        error_code: Some(ErrorCode::Invariant.as_str().to_string()),
        now,
    }
}

/// Nacks, answering whether it landed.
pub(crate) async fn nack(driver: &dyn JobDriver, params: &NackParams) -> bool {
    driver
        .job_nack(params)
        .await
        .unwrap_or_else(|e| panic!("nack failed: {e}"))
}

/// A heartbeat of `job` at `now`, answering whether the claim still holds.
pub(crate) async fn heartbeat(
    driver: &dyn JobDriver,
    job: JobId,
    by: &ClaimIdentity,
    now: Timestamp,
) -> bool {
    driver
        .job_heartbeat(&HeartbeatParams {
            job_id: job,
            by: by.clone(),
            visibility_timeout: VISIBILITY,
            now,
        })
        .await
        .unwrap_or_else(|e| panic!("heartbeat failed: {e}"))
}

/// Asserts `result` is refused with `code`.
pub(crate) fn assert_refused<T: Debug>(result: Result<T, JobError>, code: ErrorCode) {
    match result {
        Err(e) => assert_eq!(e.code(), Some(code), "refused with the wrong code: {e}"),
        Ok(value) => panic!("expected {}, got Ok({value:?})", code.as_str()),
    }
}

/// The stats row of `queue` (all zeros when the driver reports none).
pub(crate) async fn stats_of(driver: &dyn JobDriver, queue: &str, now: Timestamp) -> QueueStats {
    driver
        .queue_stats(&QueueStatsParams { now })
        .await
        .unwrap_or_else(|e| panic!("queue_stats failed: {e}"))
        .into_iter()
        .find(|s| s.queue == queue)
        .unwrap_or_else(|| QueueStats {
            queue: queue.to_string(),
            ..QueueStats::default()
        })
}
