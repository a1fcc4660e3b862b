//! `#[ledger]`: its part of the pipeline (`super::pipeline`), and what it emits: the handle
//! struct unchanged, the `Job` and `Ledger` impls, the checked enqueue methods and the registry
//! entries.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::ItemStruct;

use super::descriptor::{job_descriptor, scope_tenant_mode, JobShape};
use super::pipeline::impl_macro;
use crate::args::backfill::LedgerArgs;
use crate::check;
use crate::model::LedgerDecl;
use crate::value::book::Book;

/// `#[ledger]`, for the expansion pipeline.
pub struct Ledger;

impl_macro! {
    impl Macro for Ledger {
        name: "ledger",
        wrong_item: "`#[ledger]` goes on a unit struct, the handle: `pub struct \
            PostPayment;` (X_JOB_DECLARATION_INVALID)",
        item: ItemStruct,
        args: LedgerArgs,
        decl: LedgerDecl,
        refused: crate::args::backfill::ledger_refused,
        check: check::ledger,
        emit: quote_ledger,
        stand_in: stand_in,
        // The handle is the user's own struct, so only the crate path is taken.
        rename: [crate_path],
    }
}

/// What a refused `#[ledger]` leaves for its call sites: the handle struct is the user's own
/// and stays; this adds its `Job` impl and its methods, whose bodies never run. Nothing for a
/// generic struct, which is refused as such.
fn stand_in(decl: &LedgerDecl<'_>) -> TokenStream {
    let item = decl.item;
    if !item.generics.params.is_empty() {
        return TokenStream::new();
    }
    let vis = &item.vis;
    let handle = &item.ident;
    let krate = &decl.crate_path;
    let p = quote!(#krate::__private);
    let name = decl.name.as_deref().unwrap_or("");
    let stand_in_job = super::fallback::stand_in_job(
        &p,
        handle,
        name,
        &quote!(#p::Posting),
        "Posting",
        &quote!(#p::PostingReceipt),
    );
    quote! {
        #[allow(dead_code, unused_variables, clippy::all)]
        const _: () = {
            #stand_in_job

            impl #handle {
                #vis async fn enqueue(
                    _jobs: &#p::Jobs,
                    _posting: #p::Posting,
                ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                    ::std::unreachable!()
                }
                #vis async fn enqueue_in(
                    _jobs: &#p::Jobs,
                    _conn: &mut impl #p::CallerConnection,
                    _posting: #p::Posting,
                ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                    ::std::unreachable!()
                }
                #vis fn descriptor() -> #p::JobDescriptor {
                    ::std::unreachable!()
                }
            }
        };
    }
}

fn quote_ledger(decl: &LedgerDecl<'_>) -> TokenStream {
    let item = decl.item;
    let vis = &item.vis;
    let handle = &item.ident;
    let krate = &decl.crate_path;
    let p = quote!(#krate::__private);
    let (Some(name), Some(scope), Some(book)) = (&decl.name, decl.tenant, &decl.book) else {
        unreachable!("checked by check::ledger");
    };
    let input_ty = quote!(#p::Posting);
    let mut shape = JobShape::new(
        name,
        scope_tenant_mode(&p, scope),
        input_ty.clone(),
        "Posting",
    );
    shape.queue = decl.queue.as_deref();
    shape.retry = Some(&decl.retry);
    let job_descriptor = job_descriptor(&p, shape);
    let variant = syn::Ident::new(scope.variant(), Span::call_site());
    let book_text = book.text();
    let book_body = match book {
        Book::Driver => quote!(#p::driver_book(__run)),
        // A fn of another shape is reported at the path.
        Book::Fn(path) => quote_spanned! {path.span()=>
            {
                let __book: fn(&#p::Run) -> ::std::result::Result<
                    #p::Arc<dyn #p::LedgerBook>,
                    #p::JobError,
                > = #path;
                __book(__run)
            }
        },
    };
    let enqueue_doc = format!(
        "Posts to the `{name}` ledger: refuses an unbalanced or malformed posting at once \
         (`X_LEDGER_UNBALANCED`, `X_LEDGER_ENTRY_INVALID`), then enqueues it. A posting key is \
         posted once."
    );

    quote! {
        #item

        const _: () = {
            impl #p::Job for #handle {
                type Input = #input_ty;
                type Output = #p::PostingReceipt;

                const DESCRIPTOR: #p::JobDescriptor = #job_descriptor;

                fn idempotency_key(input: &#input_ty) -> ::std::string::String {
                    #p::posting_job_key(#name, input)
                }

                fn tenant(input: &#input_ty) -> ::std::option::Option<::std::string::String> {
                    ::std::clone::Clone::clone(&input.tenant)
                }

                fn run(
                    __run: #p::Run,
                    __input: #input_ty,
                ) -> #p::BoxFuture<'static, ::std::result::Result<Self::Output, #p::JobError>> {
                    ::std::boxed::Box::pin(#p::run_ledger::<Self>(__run, __input))
                }
            }

            impl #p::Ledger for #handle {
                const LEDGER: #p::LedgerDescriptor = #p::LedgerDescriptor {
                    name: #name,
                    tenant: #p::LedgerTenant::#variant,
                    book: #book_text,
                };

                fn book(
                    __run: &#p::Run,
                ) -> ::std::result::Result<#p::Arc<dyn #p::LedgerBook>, #p::JobError> {
                    #book_body
                }
            }

            #[allow(dead_code)]
            impl #handle {
                #[doc = #enqueue_doc]
                #vis async fn enqueue(
                    jobs: &#p::Jobs,
                    posting: #input_ty,
                ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                    #p::assert_balanced_posting(&posting)?;
                    jobs.enqueue::<Self>(posting).await
                }

                /// [`Self::enqueue`] on the caller's Postgres connection or transaction: the
                /// posting is queued if and only if that transaction commits.
                #vis async fn enqueue_in(
                    jobs: &#p::Jobs,
                    conn: &mut impl #p::CallerConnection,
                    posting: #input_ty,
                ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                    #p::assert_balanced_posting(&posting)?;
                    jobs.enqueue_in::<Self>(conn, posting).await
                }

                /// The job's declaration, as the manifest shows it.
                #vis const fn descriptor() -> #p::JobDescriptor {
                    <Self as #p::Job>::DESCRIPTOR
                }
            }

            #p::inventory::submit! {
                #p::JobEntry::of::<#handle>()
            }

            #p::inventory::submit! {
                #p::DeclaredLedger::of::<#handle>()
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(args: &str, item: &str) -> Result<String, String> {
        super::super::pipeline::run::<Ledger>(args.parse().unwrap(), item.parse().unwrap())
            .map(|tokens| tokens.to_string())
            .map_err(|refused| {
                refused
                    .errors
                    .into_iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
    }

    #[test]
    fn the_driver_book() {
        let out = expand_str(
            r#"name = "payments", tenant = per_tenant, book = driver"#,
            "pub struct PostPayment;",
        )
        .unwrap();
        for expected in [
            "impl :: jobs :: __private :: Ledger for PostPayment",
            "LedgerTenant :: PerTenant",
            "driver_book (__run)",
            "posting_job_key (\"payments\" , input)",
            "assert_balanced_posting (& posting) ?",
        ] {
            assert!(out.contains(expected), "missing `{expected}` in {out}");
        }
    }

    #[test]
    fn missing_everything() {
        let err = expand_str("", "pub struct PostPayment { x: u32 }").unwrap_err();
        for expected in [
            "needs `name = \"..\"`",
            "needs a tenant decision",
            "needs a book",
            "goes on a unit struct",
        ] {
            assert!(err.contains(expected), "missing `{expected}` in\n{err}");
        }
    }
}
