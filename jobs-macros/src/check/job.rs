//! The `#[job]` rules, one function each, numbered as in seed-inventory.md §30.

use quote::quote;
use syn::{FnArg, ReturnType, Type};

use crate::errors::Errors;
use crate::model::JobDecl;

/// §30 item 1: a job has an idempotency key. Without one, every enqueue is a new run and
/// at-least-once delivery cannot be made effectively-once (X_IDEMPOTENCY_REQUIRED).
pub fn key_is_declared(errs: &mut Errors, decl: &JobDecl<'_>) {
    if decl.args.is_some_and(|args| args.key.is_none()) {
        errs.at(
            decl.attr_span(),
            "`#[job]` needs an idempotency key: add `key = \"<template over the input's \
             fields>\"` (X_IDEMPOTENCY_REQUIRED)",
        );
    }
}

/// §30 item 2: a job states its tenant, or states that it has none; tenant-scoped reads are
/// checked against it, so it is never left to a default (X_JOB_TENANT_REQUIRED).
pub fn tenant_is_declared(errs: &mut Errors, decl: &JobDecl<'_>) {
    if decl.args.is_some_and(|args| args.tenant.is_none()) {
        errs.at(
            decl.attr_span(),
            "`#[job]` needs a tenant decision: add `tenant = <field of the input>` or \
             `tenant = none` (X_JOB_TENANT_REQUIRED)",
        );
    }
}

/// §30 item 3: the body is an `async fn`; the worker awaits it, and steps, sleeps and event
/// waits are all awaited inside it.
pub fn fn_is_async(errs: &mut Errors, decl: &JobDecl<'_>) {
    let sig = &decl.item.sig;
    if sig.asyncness.is_none() {
        let fn_token = &sig.fn_token;
        let ident = &sig.ident;
        errs.spanned(
            &quote!(#fn_token #ident),
            format!(
                "a `#[job]` fn must be `async`: write `async fn {ident}` \
                 (X_JOB_DECLARATION_INVALID)"
            ),
        );
    }
}

/// §30 item 3: the body is a free, non-generic fn; the job's input and output are concrete
/// types, because the manifest describes them and the queue stores them.
pub fn fn_is_free_and_concrete(errs: &mut Errors, decl: &JobDecl<'_>) {
    let sig = &decl.item.sig;
    if let Some(FnArg::Receiver(receiver)) = sig.inputs.first() {
        errs.spanned(
            receiver,
            "a `#[job]` fn is a free fn, not a method: take `run: Run, input: YourInput` \
             instead of `self` (X_JOB_DECLARATION_INVALID)",
        );
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errs.spanned(
            &sig.generics,
            "a `#[job]` fn cannot be generic: its input and output are stored and described \
             in the manifest, so they must be concrete types (X_JOB_DECLARATION_INVALID)",
        );
    }
}

/// §30 item 3: the body takes exactly the run context and the input, in that order.
pub fn fn_takes_run_and_input(errs: &mut Errors, decl: &JobDecl<'_>) {
    let sig = &decl.item.sig;
    if matches!(sig.inputs.first(), Some(FnArg::Receiver(_))) {
        return; // reported by `fn_is_free_and_concrete`
    }
    let ident = &sig.ident;
    let shape = format!("`async fn {ident}(run: Run, input: YourInput)`");
    match sig.inputs.len() {
        2 => {}
        0 => errs.at(
            sig.paren_token.span.join(),
            format!(
                "a `#[job]` fn takes the run context and the input: write {shape} \
                 (X_JOB_DECLARATION_INVALID)"
            ),
        ),
        1 => errs.spanned(
            &sig.inputs,
            format!(
                "a `#[job]` fn takes the run context and then the input, found one \
                 parameter: write {shape}, with the input a type that derives `Serialize`, \
                 `Deserialize` and `JsonSchema` (X_JOB_DECLARATION_INVALID)"
            ),
        ),
        _ => {
            let extra: Vec<_> = sig.inputs.iter().skip(2).collect();
            errs.spanned(
                &quote!(#(#extra),*),
                format!(
                    "a `#[job]` fn takes exactly two parameters, the run context and the \
                     input: put everything the job needs in the input struct, as in {shape} \
                     (X_JOB_DECLARATION_INVALID)"
                ),
            );
        }
    }
    if let Some(FnArg::Typed(input)) = sig.inputs.iter().nth(1) {
        if let Type::Reference(reference) = &*input.ty {
            errs.spanned(
                reference,
                "a job input is taken by value, not by reference: the worker deserializes \
                 it from the queue and hands it over (X_JOB_DECLARATION_INVALID)",
            );
        }
    }
}

/// §30 item 3: the body returns a `Result`, whose `Ok` is the job's output; the rest of the
/// shape is checked by the `JobReturn` bound on the return type.
pub fn fn_returns_a_result(errs: &mut Errors, decl: &JobDecl<'_>) {
    let sig = &decl.item.sig;
    if let ReturnType::Default = sig.output {
        // At the closing parenthesis, where the return type goes.
        errs.at(
            sig.paren_token.span.close(),
            "a `#[job]` fn returns `Result<Output, JobError>`: add `-> Result<(), JobError>` \
             after the parameters (X_JOB_DECLARATION_INVALID)",
        );
    }
}

/// Two retry delays stated together must make sense together: a `max_delay` below `delay`
/// would silently cap every delay below the one declared.
pub fn retry_delays_are_ordered(errs: &mut Errors, decl: &JobDecl<'_>) {
    if let (Some(delay), Some(max_delay)) = (&decl.retry.delay, &decl.retry.max_delay) {
        if max_delay.millis < delay.millis {
            errs.spanned(
                &max_delay.lit,
                format!(
                    "`max_delay` ({}) is shorter than `delay` ({}): every retry would wait \
                     `max_delay`; raise `max_delay` or lower `delay` \
                     (X_JOB_DECLARATION_INVALID)",
                    max_delay.lit.value(),
                    delay.lit.value(),
                ),
            );
        }
    }
}

/// A debounced job waits its window before it is due; an expiry no longer than that window
/// would discard every one of them.
pub fn debounce_fits_expiry(errs: &mut Errors, decl: &JobDecl<'_>) {
    if let (Some(debounce), Some(expires_in)) = (&decl.debounce, &decl.expires_in) {
        if expires_in.millis <= debounce.millis {
            errs.spanned(
                &expires_in.lit,
                format!(
                    "`expires_in` ({}) is not longer than `debounce` ({}): every job would be due \
                     only after its expiry and never run; raise `expires_in` or lower \
                     `debounce` (X_JOB_DECLARATION_INVALID)",
                    expires_in.lit.value(),
                    debounce.lit.value(),
                ),
            );
        }
    }
}

/// A unique period counts from the enqueue, and a debounced job is not due before its window
/// ends (each enqueue of its key pushes it back): a period no longer than the window could never
/// hold a finished job, so it would say nothing. Together, a longer period means: while queued
/// the job takes the latest input (debounce), once started it dedupes, and once finished it
/// still answers its key until the period ends.
pub fn unique_outlasts_debounce(errs: &mut Errors, decl: &JobDecl<'_>) {
    if let (Some(debounce), Some(unique)) = (&decl.debounce, &decl.unique_for) {
        if unique.millis <= debounce.millis {
            errs.spanned(
                &unique.lit,
                format!(
                    "`unique(for = \"{}\")` is not longer than `debounce` ({}): a debounced job is \
                     not due before its window ends, so it could never finish inside the period; \
                     raise the period or lower `debounce` (X_JOB_DECLARATION_INVALID)",
                    unique.lit.value(),
                    debounce.lit.value(),
                ),
            );
        }
    }
}

/// The lowest and highest `priority = N` (the runtime's `MIN_PRIORITY` and `MAX_PRIORITY`).
const PRIORITY_RANGE: std::ops::RangeInclusive<i64> = -5..=5;

/// `priority = N` lies in -5..=5 (the runtime refuses any other at enqueue with `X_INVARIANT`;
/// a literal is refused here, where it was written).
pub fn priority_is_in_range(errs: &mut Errors, decl: &JobDecl<'_>) {
    let Some(priority) = decl.priority else {
        return;
    };
    if PRIORITY_RANGE.contains(&priority) {
        return;
    }
    let Some(arg) = decl.args.and_then(|args| args.priority.as_ref()) else {
        return;
    };
    errs.spanned(
        arg.tokens(),
        format!(
            "`priority = {priority}` is outside -5..=5: write a priority from -5 (claimed last) \
             to 5 (claimed first), or leave `priority` out for the default, 0 \
             (X_JOB_DECLARATION_INVALID)"
        ),
    );
}

/// The handle is a unit struct, so it takes its name in both the type and the value
/// namespace: it must not collide with the fn itself, the input type, or another name the fn
/// uses (a type of the user's declared beside it).
///
/// The rule, as the README states it: the handle is the fn's name in PascalCase
/// (`tenant_sync` -> `TenantSync`) unless `handle = ..` names it; a handle equal to the fn's
/// own name or to the last segment of the input type's path is refused.
pub fn handle_is_free(errs: &mut Errors, decl: &JobDecl<'_>) {
    let handle = &decl.handle;
    let declared = decl.args.is_some_and(|args| args.handle.is_some());
    let fix = format!(
        "name the handle yourself, e.g. `handle = {handle}Job` (X_JOB_DECLARATION_INVALID)"
    );
    let (blame, origin) = super::handle::blame("job", handle, decl.item, declared);
    if *handle == decl.item.sig.ident {
        errs.spanned(blame, format!("{origin} is also the name of the fn: {fix}"));
        return;
    }
    if input_type_name(decl) == Some(handle) {
        errs.spanned(
            blame,
            format!(
                "{origin} is also the name of the job's input type: the two cannot share a \
                 name; {fix}"
            ),
        );
        return;
    }
    // A type of the user's beside the fn, which the fn names (a macro sees only the fn).
    if super::handle::first_use(decl.item, handle).is_some() {
        errs.spanned(
            blame,
            format!(
                "{origin} is also a name the fn uses (a type of yours beside it?): the two \
                 cannot share a name; {fix}"
            ),
        );
    }
}

/// The last segment of the input type's path (`Welcome` in `crate::Welcome`).
fn input_type_name<'a>(decl: &JobDecl<'a>) -> Option<&'a syn::Ident> {
    decl.input_ty().and_then(|ty| match ty {
        Type::Path(path) => path.path.segments.last().map(|s| &s.ident),
        _ => None,
    })
}
