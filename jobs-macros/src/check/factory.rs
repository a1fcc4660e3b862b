//! The `#[backfill]` and `#[ledger]` rules, one function each, numbered as in
//! seed-inventory.md §30 (items 21 to 27). Single-value rules (`batch = 0`, `rate = 0.0`) are
//! decided while parsing, in `crate::value`.

use proc_macro2::Span;
use quote::quote;
use syn::{Fields, FnArg, Ident, ItemFn, ReturnType, Type};

use crate::errors::Errors;
use crate::model::{vec_item, BackfillDecl, LedgerDecl, PagedDecl};

/// §30 item 21: a backfill has a name; it is the durable key of its passes (the job's name,
/// its idempotency key and the ledger's key), so it is never derived from the fn's name.
pub fn backfill_name_is_declared(errs: &mut Errors, decl: &BackfillDecl<'_>) {
    if decl
        .args
        .is_some_and(|args| args.delivery.common.name.is_none())
    {
        errs.at(
            decl.attr_span(),
            "`#[backfill]` needs `name = \"..\"`: the durable key its passes are recorded \
             under, e.g. `name = \"users.display-name\"` (X_JOB_DECLARATION_INVALID)",
        );
    }
}

/// §30 item 21: a backfill states its tenant decision.
pub fn backfill_tenant_is_declared(errs: &mut Errors, decl: &BackfillDecl<'_>) {
    if decl.args.is_some_and(|args| args.tenant.is_none()) {
        errs.at(
            decl.attr_span(),
            "`#[backfill]` needs a tenant decision: add `tenant = none` (one pass sweeps every \
             tenant) or `tenant = per_tenant` (each pass names its tenant) \
             (X_JOB_TENANT_REQUIRED)",
        );
    }
}

/// A backfill or a consumer reads its pages from a keyset source.
pub fn source_is_declared<'a>(errs: &mut Errors, decl: &impl PagedDecl<'a>) {
    if decl.source_missing() {
        errs.at(
            Span::call_site(),
            format!(
                "`#[{}]` needs `source = <fn>`: an `async fn(pass: Pass, after: \
                 Option<Cursor>, limit: u32) -> Result<Page<Row, Cursor>, JobError>` reading \
                 the page after a cursor (keyset, never OFFSET) (X_JOB_DECLARATION_INVALID)",
                decl.attr()
            ),
        );
    }
}

/// The handler is awaited once per page.
pub fn handler_is_async<'a>(errs: &mut Errors, decl: &impl PagedDecl<'a>) {
    let attr = decl.attr();
    let sig = &decl.item().sig;
    if sig.asyncness.is_none() {
        let fn_token = &sig.fn_token;
        let ident = &sig.ident;
        errs.spanned(
            quote!(#fn_token #ident),
            format!(
                "a `#[{attr}]` handler must be `async`: write `async fn {ident}` \
                 (X_JOB_DECLARATION_INVALID)"
            ),
        );
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errs.spanned(
            &sig.generics,
            format!(
                "a `#[{attr}]` handler cannot be generic: its rows are the source's \
                 (X_JOB_DECLARATION_INVALID)"
            ),
        );
    }
}

/// §30 item 24: the handler gets the pass (tenant, context, cancellation signal) and the
/// page's rows, and no step API: a page already is one durable step, and a step minted inside
/// it would collide with itself on the next page.
pub fn handler_takes_pass_and_rows<'a>(errs: &mut Errors, decl: &impl PagedDecl<'a>) {
    let (attr, step) = (decl.attr(), decl.step());
    let sig = &decl.item().sig;
    let shape = format!("`async fn {}(pass: Pass, rows: Vec<Row>)`", sig.ident);
    if let Some(FnArg::Receiver(receiver)) = sig.inputs.first() {
        errs.spanned(
            receiver,
            format!(
                "a `#[{attr}]` handler is a free fn: write {shape} (X_JOB_DECLARATION_INVALID)"
            ),
        );
        return;
    }
    let params = decl.params();
    if params.len() != 2 {
        errs.spanned(
            if sig.inputs.is_empty() {
                quote!(#sig)
            } else {
                let inputs = &sig.inputs;
                quote!(#inputs)
            },
            format!(
                "a `#[{attr}]` handler takes the pass and the page's rows: write {shape} \
                 (X_JOB_DECLARATION_INVALID)"
            ),
        );
        return;
    }
    if names_run(&params[0].ty) {
        errs.spanned(
            &params[0].ty,
            format!(
                "a {attr} handler gets no step API: each page already runs as its own \
                 durable step (`{step}`), so take the pass instead, {shape}; it carries the \
                 tenant, the app context and the cancellation signal (X_JOB_DECLARATION_INVALID)"
            ),
        );
    }
    if vec_item(&params[1].ty).is_none() {
        errs.spanned(
            &params[1].ty,
            format!(
                "a `#[{attr}]` handler takes the page's rows as `Vec<Row>`, with `Row` the \
                 source's row type: write {shape} (X_JOB_DECLARATION_INVALID)"
            ),
        );
    }
}

fn names_run(ty: &Type) -> bool {
    let ty = match ty {
        Type::Reference(reference) => &*reference.elem,
        other => other,
    };
    matches!(ty, Type::Path(path) if path.path.segments.last().is_some_and(|s| s.ident == "Run"))
}

/// The handler answers `Result<(), E>`.
pub fn handler_returns_a_result<'a>(errs: &mut Errors, decl: &impl PagedDecl<'a>) {
    let attr = decl.attr();
    let sig = &decl.item().sig;
    if let ReturnType::Default = sig.output {
        errs.at(
            sig.paren_token.span.close(),
            format!(
                "a `#[{attr}]` handler returns `Result<(), JobError>`: add `-> Result<(), \
                 JobError>` after the parameters (X_JOB_DECLARATION_INVALID)"
            ),
        );
    }
}

/// The handle is a unit struct named after the fn; it must not take the fn's own name. Shared
/// by the factories over `#[job]` (`#[backfill]`, `#[webhook]`, `#[purge]`); `suffix` makes the
/// suggested name (`handle = FillBackfill`).
pub fn factory_handle_is_free(errs: &mut Errors, handle: &Ident, item: &ItemFn, suffix: &str) {
    if *handle == item.sig.ident {
        errs.spanned(
            handle,
            format!(
                "the handle `{handle}` would have the same name as the fn: name the handle \
                 yourself, e.g. `handle = {handle}{suffix}` (X_JOB_DECLARATION_INVALID)"
            ),
        );
    }
}

/// §30 item 26: a ledger has a name (its job's name and the book's ledger column).
pub fn ledger_name_is_declared(errs: &mut Errors, decl: &LedgerDecl<'_>) {
    if decl
        .args
        .is_some_and(|args| args.delivery.common.name.is_none())
    {
        errs.at(
            decl.attr_span(),
            "`#[ledger]` needs `name = \"..\"`: the ledger its lines are written under, e.g. \
             `name = \"payments\"` (X_JOB_DECLARATION_INVALID)",
        );
    }
}

/// §30 item 26: a ledger states its tenant decision.
pub fn ledger_tenant_is_declared(errs: &mut Errors, decl: &LedgerDecl<'_>) {
    if decl.args.is_some_and(|args| args.tenant.is_none()) {
        errs.at(
            decl.attr_span(),
            "`#[ledger]` needs a tenant decision: add `tenant = per_tenant` (each posting \
             names its tenant; keys are unique per tenant) or `tenant = none` \
             (X_JOB_TENANT_REQUIRED)",
        );
    }
}

/// §30 item 26: a ledger names its book; there is no default book to write money into.
pub fn ledger_book_is_declared(errs: &mut Errors, decl: &LedgerDecl<'_>) {
    if decl.args.is_some_and(|args| args.book.is_none()) {
        errs.at(
            decl.attr_span(),
            "`#[ledger]` needs a book to write its lines through: add `book = driver` (the \
             driver's own book) or `book = <fn(&Run) -> Result<Arc<dyn LedgerBook>, \
             JobError>>` (X_JOB_DECLARATION_INVALID)",
        );
    }
}

/// The handle is a plain unit struct: the job's input is the runtime's `Posting`.
pub fn ledger_handle_is_unit(errs: &mut Errors, decl: &LedgerDecl<'_>) {
    let item = decl.item;
    if !matches!(item.fields, Fields::Unit) {
        errs.spanned(
            &item.fields,
            format!(
                "`#[ledger]` goes on a unit struct, the handle: `pub struct {};` (its input \
                 is always a `Posting`) (X_JOB_DECLARATION_INVALID)",
                item.ident
            ),
        );
    }
    if !item.generics.params.is_empty() {
        errs.spanned(
            &item.generics,
            "a `#[ledger]` handle cannot be generic (X_JOB_DECLARATION_INVALID)",
        );
    }
}
