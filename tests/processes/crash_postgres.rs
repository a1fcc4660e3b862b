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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_run_resumes_on_time_on_an_idle_process() {
    let store = Store::postgres("on_time_resume").await;
    crash::a_parked_run_resumes_on_time_on_another_process(&store).await;
}
