//! Rules that need more than one argument, or the fn itself. Single-value rules (a zero
//! duration, an unknown backoff) are decided while parsing, in `crate::value`.
//!
//! Every rule writes into one accumulator and carries on, so the user sees every problem of a
//! declaration at once; expansion starts only once the accumulator is empty.

mod durations;
pub mod entries;
mod factory;
pub mod handle;
mod job;
pub mod posting;
mod purge;
pub mod step_outputs;
mod steps;
mod task;
mod webhook;

use crate::errors::Errors;
use crate::model::{
    BackfillDecl, ConsumerDecl, JobDecl, LedgerDecl, PassDecl, PassKind, TaskDecl, WebhookDecl,
};

/// Every rule for a `#[job]`.
pub fn job(errs: &mut Errors, decl: &JobDecl<'_>) {
    job::key_is_declared(errs, decl);
    job::tenant_is_declared(errs, decl);
    job::fn_is_async(errs, decl);
    job::fn_is_free_and_concrete(errs, decl);
    job::fn_takes_run_and_input(errs, decl);
    job::fn_returns_a_result(errs, decl);
    job::retry_delays_are_ordered(errs, decl);
    job::debounce_fits_expiry(errs, decl);
    job::unique_outlasts_debounce(errs, decl);
    job::priority_is_in_range(errs, decl);
    job::handle_is_free(errs, decl);
    steps::step_names_are_unique(errs, &decl.item.block);
    step_outputs::step_outputs_are_owned(errs, &decl.item.block);
    durations::literal_durations_are_valid(errs, &decl.item.block);
}

/// Every rule for a `#[task]`.
pub fn task(errs: &mut Errors, decl: &TaskDecl<'_>) {
    task::cron_is_declared(errs, decl);
    task::tz_is_declared(errs, decl);
    task::fn_is_not_async(errs, decl);
    task::fn_is_free_and_concrete(errs, decl);
    task::fn_takes_the_occurrence(errs, decl);
    task::fn_returns_entries(errs, decl);
    task::max_catch_up_bounds_run_all(errs, decl);
    task::handle_is_free(errs, decl);
    entries::entries_name_jobs_by_handle(errs, &decl.item.block);
}

/// Every rule for a `#[backfill]`.
pub fn backfill(errs: &mut Errors, decl: &BackfillDecl<'_>) {
    factory::backfill_name_is_declared(errs, decl);
    factory::backfill_tenant_is_declared(errs, decl);
    factory::source_is_declared(errs, decl);
    factory::handler_is_async(errs, decl);
    factory::handler_takes_pass_and_rows(errs, decl);
    factory::handler_returns_a_result(errs, decl);
    factory::factory_handle_is_free(errs, &decl.handle, decl.item, "Backfill");
    steps::step_names_are_unique(errs, &decl.item.block);
}

/// Every rule for a `#[consumer]`.
pub fn consumer(errs: &mut Errors, decl: &ConsumerDecl<'_>) {
    if decl.args.is_some_and(|args| args.common.name.is_none()) {
        errs.at(
            proc_macro2::Span::call_site(),
            "`#[consumer]` needs `name = \"..\"`: its job's name and key and the ledger's \
             `consumer:<name>`, where its cursor is kept, e.g. `name = \"orders.feed\"` \
             (X_JOB_DECLARATION_INVALID)",
        );
    }
    factory::source_is_declared(errs, decl);
    factory::handler_is_async(errs, decl);
    factory::handler_takes_pass_and_rows(errs, decl);
    factory::handler_returns_a_result(errs, decl);
    factory::factory_handle_is_free(errs, &decl.handle, decl.item, "Consumer");
    steps::step_names_are_unique(errs, &decl.item.block);
}

/// Every rule for a `#[ledger]`.
pub fn ledger(errs: &mut Errors, decl: &LedgerDecl<'_>) {
    factory::ledger_name_is_declared(errs, decl);
    factory::ledger_tenant_is_declared(errs, decl);
    factory::ledger_book_is_declared(errs, decl);
    factory::ledger_handle_is_unit(errs, decl);
}

/// Every rule for a `#[webhook]`.
pub fn webhook(errs: &mut Errors, decl: &WebhookDecl<'_>) {
    webhook::webhook_name_is_declared(errs, decl);
    webhook::webhook_tenant_is_declared(errs, decl);
    webhook::webhook_timeout_is_below_the_drain_budget(errs, decl);
    webhook::lookup_is_async(errs, decl);
    webhook::lookup_takes_run_and_delivery(errs, decl);
    webhook::lookup_returns_a_result(errs, decl);
    factory::factory_handle_is_free(errs, &decl.handle, decl.item, "Webhook");
}

/// Every rule for a `#[purge]` or a `#[partitions]`.
pub fn scheduled_pass<K: PassKind>(errs: &mut Errors, decl: &PassDecl<'_, K>) {
    purge::pass_name_is_declared(errs, decl);
    purge::pass_fn_takes_the_run(errs, decl);
    factory::factory_handle_is_free(errs, &decl.handle, decl.item, decl.pass().suffix);
}
