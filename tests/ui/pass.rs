//! Declarations that must compile, and whose descriptors read as declared: one module per file
//! of `tests/ui/<macro>/pass/`, each with its `runs` test. They are a test binary of their own
//! rather than trybuild cases: with a case to build and run, trybuild builds (not only checks)
//! every dependency again for its project, which cost the cold suite about a minute; here they
//! share the workspace's build. `ui.rs` keeps the refusals, which trybuild only checks.

#[path = "backfill/pass/defaults_and_options.rs"]
pub mod backfill_defaults_and_options;
#[path = "consumer/pass/declared.rs"]
pub mod consumer_declared;
#[path = "job/pass/dependency_failure.rs"]
pub mod job_dependency_failure;
#[path = "job/pass/expression_key_full_options.rs"]
pub mod job_expression_key_full_options;
#[path = "job/pass/input_attribute.rs"]
pub mod job_input_attribute;
#[path = "job/pass/keep_result.rs"]
pub mod job_keep_result;
#[path = "job/pass/name_queue_handle_overrides.rs"]
pub mod job_name_queue_handle_overrides;
#[path = "job/pass/prelude_derives.rs"]
pub mod job_prelude_derives;
#[path = "job/pass/priority.rs"]
pub mod job_priority;
#[path = "job/pass/rate_limits.rs"]
pub mod job_rate_limits;
#[path = "job/pass/step_names_in_exclusive_arms.rs"]
pub mod job_step_names_in_exclusive_arms;
#[path = "job/pass/template_key_field_tenant.rs"]
pub mod job_template_key_field_tenant;
#[path = "job/pass/untyped_closures_and_tuple_input.rs"]
pub mod job_untyped_closures_and_tuple_input;
#[path = "ledger/pass/postings.rs"]
pub mod ledger_postings;
#[path = "partitions/pass/declared.rs"]
pub mod partitions_declared;
#[path = "purge/pass/declared.rs"]
pub mod purge_declared;
#[path = "task/pass/catch_up_and_overrides.rs"]
pub mod task_catch_up_and_overrides;
#[path = "task/pass/crate_path_and_iterables.rs"]
pub mod task_crate_path_and_iterables;
#[path = "task/pass/weekday_digest.rs"]
pub mod task_weekday_digest;
#[path = "webhook/pass/declared.rs"]
pub mod webhook_declared;
