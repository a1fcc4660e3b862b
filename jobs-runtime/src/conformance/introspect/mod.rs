//! The operator surface ([`JobIntrospection`]): the parity fixtures, one module per part of
//! the port (`list`, the one-job `verbs`, `bulk`, `queue_pause`, `workers`, `counters`). Every
//! case asks the driver for its `introspect()` sub-port and fails, naming the driver, when it
//! has none. The shared fixtures are here; the cases are re-exported here, the paths
//! [`conformance_suite!`](crate::conformance_suite) names.

mod bulk;
mod counters;
mod list;
mod queue_pause;
mod verbs;
mod workers;

pub use bulk::{
    job_bulk_verbs_move_at_most_a_thousand_rows, job_bulk_verbs_refuse_states_they_cannot_move,
    job_requeue_many_leaves_held_keys_and_takes_the_oldest,
};
pub use counters::{
    counters_count_a_batched_ack_and_a_burial, counters_move_with_the_settle,
    counters_rollup_folds_buckets_into_the_next_tier,
};
pub use list::{
    job_list_filters_by_every_field, job_list_merges_every_state_newest_first,
    job_list_pages_newest_first_both_ways, job_list_refuses_bad_limits_and_foreign_cursors,
};
pub use queue_pause::queue_pause_stops_the_next_claim;
pub use verbs::{
    job_promote_makes_a_waiting_job_due, job_remove_deletes_the_row_and_its_steps,
    job_requeue_and_promote_keep_the_priority, job_requeue_from_step_forgets_it_and_later_steps,
    job_requeue_refuses_live_unknown_and_held_keys,
};
pub use workers::worker_rows_expire_and_are_forgotten;

use std::sync::Arc;

use uuid::Uuid;

use super::*;
use crate::driver::introspect::*;
use crate::driver::introspect::{
    CounterTotalsParams, CountersParams, CountersRollupParams, JobPromoteParams, JobRemoveParams,
    QueuePauseParams, QueueResumeParams, WorkerForgetParams, WorkerListParams,
};
use crate::driver::{JobCancelParams, JobGetParams, StepListParams, StepPutParams};

/// The operator port: a driver without one fails these cases loudly, never skips them.
fn port(driver: &dyn JobDriver) -> &dyn JobIntrospection {
    driver.introspect().unwrap_or_else(|| {
        panic!(
            "the `{}` driver has no introspection: the operator cases need one",
            driver.name()
        )
    })
}

/// A due request created at `now` (so rows sort by creation), under `key`.
fn request_at(name: &str, key: &str, now: Timestamp) -> EnqueueRequest {
    EnqueueRequest {
        run_at: now,
        now,
        ..request(name, key)
    }
}

async fn list(p: &dyn JobIntrospection, params: JobListParams) -> JobPage {
    p.job_list(&params)
        .await
        .unwrap_or_else(|e| panic!("job_list failed: {e}"))
}

fn ids(page: &JobPage) -> Vec<JobId> {
    page.jobs.iter().map(|j| j.id).collect()
}

fn completed_step(run_id: RunId, name: &str, now: Timestamp) -> StepRecord {
    completed_step_record(run_id, name, serde_json::json!({ "step": name }), now)
}

/// Runs job `id` (the only due one) to `dead` at `now`.
async fn run_dead(d: &dyn JobDriver, worker: &str, now: Timestamp) -> ClaimedJob {
    let job = claim_one(d, worker, now).await;
    let params = nack_params(job.id, &job.by, NackTarget::DeadLetter, now, now);
    assert!(nack(d, &params).await);
    job
}
