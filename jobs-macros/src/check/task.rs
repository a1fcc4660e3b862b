//! The `#[task]` rules, one function each, numbered as in seed-inventory.md §30. A task is a
//! cron trigger that only enqueues (§12): its fn turns one occurrence into the jobs to enqueue.
//! A body's options (`retry`, `timeout`, ...) are refused while parsing, by
//! `crate::args::task::refused`.

use heck::ToUpperCamelCase;
use quote::quote;
use syn::ext::IdentExt;
use syn::FnArg;

use crate::errors::Errors;
use crate::model::TaskDecl;
use crate::value::catch_up::CatchUp;

/// §30 item 17: a task has a schedule.
pub fn cron_is_declared(errs: &mut Errors, decl: &TaskDecl<'_>) {
    if decl.args.is_some_and(|args| args.cron.is_none()) {
        errs.at(
            decl.attr_span(),
            "`#[task]` needs a schedule: add `cron = \"<minute hour day-of-month month \
             day-of-week>\"`, e.g. `cron = \"0 9 * * 1-5\"` (X_INVARIANT)",
        );
    }
}

/// §30 item 15: a task states its zone; the same cron fires at different instants in
/// different zones, so it is never left to the host's.
pub fn tz_is_declared(errs: &mut Errors, decl: &TaskDecl<'_>) {
    if decl.args.is_some_and(|args| args.tz.is_none()) {
        errs.at(
            decl.attr_span(),
            "`#[task]` needs `tz = \"Area/City\"`: a cron means nothing without its zone; add \
             e.g. `tz = \"Europe/Paris\"` or `tz = \"UTC\"` (X_INVARIANT)",
        );
    }
}

/// §30 item 19: a task never runs a body. Its fn is cheap and synchronous; the work it
/// starts belongs in the jobs it enqueues.
pub fn fn_is_not_async(errs: &mut Errors, decl: &TaskDecl<'_>) {
    let sig = &decl.item.sig;
    if let Some(asyncness) = &sig.asyncness {
        errs.spanned(
            asyncness,
            "a task only enqueues; make it a plain fn returning Vec<Entry> and put the work in \
             a #[job] (X_JOB_DECLARATION_INVALID)",
        );
    }
}

/// The fn is free and not generic: the scheduler calls it by name with one occurrence.
pub fn fn_is_free_and_concrete(errs: &mut Errors, decl: &TaskDecl<'_>) {
    let sig = &decl.item.sig;
    if let Some(FnArg::Receiver(receiver)) = sig.inputs.first() {
        errs.spanned(
            receiver,
            "a `#[task]` fn is a free fn, not a method: take `at: Occurrence` instead of \
             `self` (X_JOB_DECLARATION_INVALID)",
        );
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errs.spanned(
            &sig.generics,
            "a `#[task]` fn cannot be generic: the scheduler calls it with an occurrence and \
             nothing else (X_JOB_DECLARATION_INVALID)",
        );
    }
}

/// §12: the entries are built from the occurrence only, never the wall clock, so the fn takes
/// exactly that one parameter.
pub fn fn_takes_the_occurrence(errs: &mut Errors, decl: &TaskDecl<'_>) {
    let sig = &decl.item.sig;
    if matches!(sig.inputs.first(), Some(FnArg::Receiver(_))) {
        return; // reported by `fn_is_free_and_concrete`
    }
    let ident = &sig.ident;
    let shape = format!("`fn {ident}(at: Occurrence) -> Vec<Entry>`");
    match sig.inputs.len() {
        1 => {}
        0 => errs.at(
            sig.paren_token.span.join(),
            format!(
                "a `#[task]` fn takes the occurrence it fires for: write {shape} \
                 (X_JOB_DECLARATION_INVALID)"
            ),
        ),
        _ => {
            let extra: Vec<_> = sig.inputs.iter().skip(1).collect();
            errs.spanned(
                &quote!(#(#extra),*),
                format!(
                    "a `#[task]` fn takes exactly one parameter, the occurrence: build the \
                     entries from it alone, as in {shape} (X_JOB_DECLARATION_INVALID)"
                ),
            );
        }
    }
}

/// §12: the fn answers the jobs to enqueue (zero entries is a valid no-op tick). Their type is
/// checked by the generated call; a missing return type is refused here, where it goes.
pub fn fn_returns_entries(errs: &mut Errors, decl: &TaskDecl<'_>) {
    let sig = &decl.item.sig;
    if decl.output_ty().is_none() {
        errs.at(
            sig.paren_token.span.close(),
            "a `#[task]` fn returns the jobs to enqueue: add `-> Vec<Entry>` after the \
             parameters (`vec![]` is a tick that enqueues nothing) (X_JOB_DECLARATION_INVALID)",
        );
    }
}

/// §30 item 18: `max_catch_up` bounds `run_all` only; next to `skip` or `run_once` it would
/// read as a bound that is never applied.
pub fn max_catch_up_bounds_run_all(errs: &mut Errors, decl: &TaskDecl<'_>) {
    let Some(args) = decl.args else {
        return;
    };
    let (Some(given), Some(_)) = (&args.max_catch_up, decl.max_catch_up) else {
        return;
    };
    if args.catch_up.is_some() && decl.catch_up.is_none() {
        return; // the policy did not parse, and is reported
    }
    let policy = match decl.catch_up.unwrap_or(CatchUp::Skip) {
        CatchUp::RunAll => return,
        CatchUp::Skip if args.catch_up.is_none() => "`skip` (the default)",
        CatchUp::Skip => "`skip`",
        CatchUp::RunOnce => "`run_once`",
    };
    errs.spanned(
        given.tokens(),
        format!(
            "`max_catch_up` bounds only `catch_up = run_all`; with {policy} it has no effect: \
             add `catch_up = run_all`, or remove `max_catch_up` (X_JOB_DECLARATION_INVALID)"
        ),
    );
}

/// The handle is a unit struct, so it takes its name in both the type and the value
/// namespace: it must not collide with the fn itself, nor with a type of the user's that the
/// fn names (`#[task] fn digest` building a `Digest { .. }` declared beside it: a macro cannot
/// see the items beside it, but it sees the fn's own tokens). Without this rule rustc reports
/// the name defined twice, then errors of the handle's derives on the user's struct, with no
/// hint of the fix.
pub fn handle_is_free(errs: &mut Errors, decl: &TaskDecl<'_>) {
    let handle = &decl.handle;
    if *handle != decl.item.sig.ident {
        handle_is_not_a_name_the_fn_uses(errs, decl);
        return;
    }
    let declared = decl.args.is_some_and(|args| args.handle.is_some());
    let (blame, _) = super::handle::blame("task", handle, decl.item, declared);
    let pascal = handle.unraw().to_string().to_upper_camel_case();
    let suggestion = if handle.unraw() == pascal {
        format!("{pascal}Task")
    } else {
        pascal
    };
    errs.spanned(
        blame,
        format!(
            "the handle `{handle}` would have the same name as the fn: name the handle \
             yourself, e.g. `handle = {suggestion}` (X_JOB_DECLARATION_INVALID)"
        ),
    );
}

/// The other half of [`handle_is_free`]: the handle's name is not one the fn's signature or
/// body uses for something else.
fn handle_is_not_a_name_the_fn_uses(errs: &mut Errors, decl: &TaskDecl<'_>) {
    let handle = &decl.handle;
    if super::handle::first_use(decl.item, handle).is_none() {
        return;
    }
    let declared = decl.args.is_some_and(|args| args.handle.is_some());
    let (blame, origin) = super::handle::blame("task", handle, decl.item, declared);
    errs.spanned(
        blame,
        format!(
            "{origin} is also a name the fn uses (a type of yours beside it?): the two cannot \
             share a name; name the handle yourself, e.g. `handle = {}Task` \
             (X_JOB_DECLARATION_INVALID)",
            handle.unraw()
        ),
    );
}
