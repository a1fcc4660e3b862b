//! The `#[purge]` and `#[partitions]` rules, one function each, worded for the attribute. The
//! schedule, zone and timeout are read (and so checked) while parsing, in `crate::value`.

use quote::quote;
use syn::{FnArg, ReturnType};

use crate::errors::Errors;
use crate::model::{PassDecl, PassKind};

/// A scheduled pass has a name: its job's durable name, and its task's name after it.
pub fn pass_name_is_declared<K: PassKind>(errs: &mut Errors, decl: &PassDecl<'_, K>) {
    let pass = decl.pass();
    if decl.args.is_some_and(|args| args.common.name.is_none()) {
        errs.at(
            decl.attr_span(),
            format!(
                "`#[{}]` needs `name = \"..\"`: the {} job's durable name (its task is \
                 `<name>.schedule`), e.g. `name = \"{}\"` (X_JOB_DECLARATION_INVALID)",
                pass.attr, pass.attr, pass.example
            ),
        );
    }
}

/// The fn builds what one pass runs over from the attempt's run.
pub fn pass_fn_takes_the_run<K: PassKind>(errs: &mut Errors, decl: &PassDecl<'_, K>) {
    let pass = decl.pass();
    let (attr, builder) = (pass.attr, pass.builder);
    let sig = &decl.item.sig;
    let shape = format!(
        "`fn {}(run: &Run) -> Result<{builder}, JobError>`",
        sig.ident
    );
    if let Some(FnArg::Receiver(receiver)) = sig.inputs.first() {
        errs.spanned(
            receiver,
            format!("a `#[{attr}]` fn is a free fn: write {shape} (X_JOB_DECLARATION_INVALID)"),
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
                "a `#[{attr}]` fn builds {} from the attempt's run: write {shape} \
                 (X_JOB_DECLARATION_INVALID)",
                pass.builds
            ),
        );
    }
    if let ReturnType::Default = sig.output {
        errs.at(
            sig.paren_token.span.close(),
            format!(
                "a `#[{attr}]` fn returns `Result<{builder}, JobError>`: add `-> \
                 Result<{builder}, JobError>` after the parameters (X_JOB_DECLARATION_INVALID)"
            ),
        );
    }
}
