//! The `#[webhook]` rules, one function each. Single-value rules (`disable_after = 0`, a zero
//! `timeout`) are decided while parsing, in `crate::value`.

use quote::quote;
use syn::{FnArg, ReturnType};

use crate::errors::Errors;
use crate::model::WebhookDecl;

/// The worker's default shutdown deadline, in milliseconds: a drain lets running jobs finish
/// within it, so one request's timeout stays below it and a drain never cuts a request already
/// on the wire.
const DRAIN_BUDGET_MS: u64 = 25_000;

/// A webhook has a name: the durable name its delivery jobs queue under.
pub fn webhook_name_is_declared(errs: &mut Errors, decl: &WebhookDecl<'_>) {
    if decl
        .args
        .is_some_and(|args| args.delivery.common.name.is_none())
    {
        errs.at(
            decl.attr_span(),
            "`#[webhook]` needs `name = \"..\"`: the durable name its deliveries queue under, \
             e.g. `name = \"orders.webhook\"` (X_JOB_DECLARATION_INVALID)",
        );
    }
}

/// A webhook states its tenant decision.
pub fn webhook_tenant_is_declared(errs: &mut Errors, decl: &WebhookDecl<'_>) {
    if decl.args.is_some_and(|args| args.tenant.is_none()) {
        errs.at(
            decl.attr_span(),
            "`#[webhook]` needs a tenant decision: add `tenant = none` (deliveries belong to \
             no tenant) or `tenant = per_tenant` (each delivery names its tenant) \
             (X_JOB_TENANT_REQUIRED)",
        );
    }
}

/// One request's timeout is below the worker's default drain budget.
pub fn webhook_timeout_is_below_the_drain_budget(errs: &mut Errors, decl: &WebhookDecl<'_>) {
    let Some(timeout) = &decl.timeout else {
        return;
    };
    if timeout.millis >= DRAIN_BUDGET_MS {
        errs.spanned(
            &timeout.lit,
            format!(
                "a webhook's `timeout` must be below the worker's 25s shutdown deadline, so a \
                 drain never cuts a request already sent: found \"{}\"; use at most \"24s\" \
                 (X_JOB_DECLARATION_INVALID)",
                timeout.lit.value()
            ),
        );
    }
}

/// The fn is awaited once per attempt.
pub fn lookup_is_async(errs: &mut Errors, decl: &WebhookDecl<'_>) {
    let sig = &decl.item.sig;
    if sig.asyncness.is_none() {
        let fn_token = &sig.fn_token;
        let ident = &sig.ident;
        errs.spanned(
            quote!(#fn_token #ident),
            format!(
                "a `#[webhook]` fn must be `async`: write `async fn {ident}` \
                 (X_JOB_DECLARATION_INVALID)"
            ),
        );
    }
}

/// The fn takes the attempt's run and the delivery, by reference.
pub fn lookup_takes_run_and_delivery(errs: &mut Errors, decl: &WebhookDecl<'_>) {
    let sig = &decl.item.sig;
    let shape = format!(
        "`async fn {}(run: &Run, delivery: &WebhookDelivery) -> Result<WebhookTarget, JobError>`",
        sig.ident
    );
    if let Some(FnArg::Receiver(receiver)) = sig.inputs.first() {
        errs.spanned(
            receiver,
            format!("a `#[webhook]` fn is a free fn: write {shape} (X_JOB_DECLARATION_INVALID)"),
        );
        return;
    }
    // A receiver was refused above, so every input is a typed parameter.
    if sig.inputs.len() != 2 {
        errs.spanned(
            if sig.inputs.is_empty() {
                quote!(#sig)
            } else {
                let inputs = &sig.inputs;
                quote!(#inputs)
            },
            format!(
                "a `#[webhook]` fn reads the endpoint and the event of one delivery, per \
                 attempt: write {shape} (X_JOB_DECLARATION_INVALID)"
            ),
        );
    }
}

/// The fn answers the endpoint and the event, or an error.
pub fn lookup_returns_a_result(errs: &mut Errors, decl: &WebhookDecl<'_>) {
    if let ReturnType::Default = decl.item.sig.output {
        errs.at(
            decl.item.sig.paren_token.span.close(),
            "a `#[webhook]` fn returns `Result<WebhookTarget, JobError>`: add `-> \
             Result<WebhookTarget, JobError>` after the parameters (X_JOB_DECLARATION_INVALID)",
        );
    }
}
