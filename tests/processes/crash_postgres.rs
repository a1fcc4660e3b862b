//! A real worker process is SIGKILLed in the middle of a multi-step job; another worker process
//! finishes the job once the visibility timeout lapses. Completed steps are not run again and
//! nothing is lost. The scenario is `support/crash.rs`, shared with `crash_sqlite.rs`.

use crate::support;

use crate::crash;

use support::store::Store;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_s_job_is_finished_by_another_without_rerunning_completed_steps() {
    let store = Store::postgres("crash_kill_mid_step").await;
    crash::a_killed_worker_s_job_is_finished_by_another(&store).await;
}
