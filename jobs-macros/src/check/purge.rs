//! The `#[purge]` rules, one function each. The schedule, zone and timeout are read (and so
//! checked) while parsing, in `crate::value`.

use quote::quote;
use syn::{FnArg, ReturnType};

use crate::errors::Errors;
use crate::model::PurgeDecl;

/// A purge has a name: its job's durable name, and its task's name after it.
pub fn purge_name_is_declared(errs: &mut Errors, decl: &PurgeDecl<'_>) {
    if decl.args.is_some_and(|args| args.common.name.is_none()) {
        errs.at(
            decl.attr_span(),
            "`#[purge]` needs `name = \"..\"`: the purge job's durable name (its task is \
             `<name>.schedule`), e.g. `name = \"app.purge\"` (X_JOB_DECLARATION_INVALID)",
        );
    }
}

/// The fn builds one pass's targets from the attempt's run.
pub fn targets_fn_takes_the_run(errs: &mut Errors, decl: &PurgeDecl<'_>) {
    let sig = &decl.item.sig;
    let shape = format!("`fn {}(run: &Run) -> Result<Purge, JobError>`", sig.ident);
    if let Some(FnArg::Receiver(receiver)) = sig.inputs.first() {
        errs.spanned(
            receiver,
            format!("a `#[purge]` fn is a free fn: write {shape} (X_JOB_DECLARATION_INVALID)"),
        );
        return;
    }
    if sig.inputs.len() != 1 {
        errs.spanned(
            if sig.inputs.is_empty() {
                quote!(#sig)
            } else {
                let inputs = &sig.inputs;
                quote!(#inputs)
            },
            format!(
                "a `#[purge]` fn builds one pass's targets from the attempt's run: write \
                 {shape} (X_JOB_DECLARATION_INVALID)"
            ),
        );
    }
    if let ReturnType::Default = sig.output {
        errs.at(
            sig.paren_token.span.close(),
            "a `#[purge]` fn returns `Result<Purge, JobError>`: add `-> Result<Purge, \
             JobError>` after the parameters (X_JOB_DECLARATION_INVALID)",
        );
    }
}

/// The handle is a unit struct named after the fn; it must not take the fn's own name.
pub fn purge_handle_is_free(errs: &mut Errors, decl: &PurgeDecl<'_>) {
    if decl.handle == decl.item.sig.ident {
        errs.spanned(
            &decl.handle,
            format!(
                "the handle `{0}` would have the same name as the fn: name the handle \
                 yourself, e.g. `handle = {0}Purge` (X_JOB_DECLARATION_INVALID)",
                decl.handle
            ),
        );
    }
}
